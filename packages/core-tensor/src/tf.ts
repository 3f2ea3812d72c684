// tfjs-core's and tfjs-backend-wasm's typings use the globals of @types/long and
// @types/emscripten without referencing them; referenced here, and kept in dist/tf.d.ts, so a
// project type-checking its libraries (skipLibCheck: false) needs neither in its `types`. The
// third adds the chained methods (`x.reshape(…)`) that #tfjs-registrations installs to the
// Tensor type.
/// <reference types="long" preserve="true" />
/// <reference types="emscripten" preserve="true" />
/// <reference types="@tensorflow/tfjs-core/dist/public/chained_ops/register_all_chained_ops.js" preserve="true" />
/**
 * The single TensorFlow.js instance every pbrl package uses.
 *
 * `@tensorflow/tfjs-core`'s Node entry registers no gradient functions and no chained tensor
 * methods, and the per-file modules that do are not loadable by Node; `#tfjs-registrations`
 * (dist/tfjs-registrations.js, bundled from them at build time by bundle-tfjs-registrations.mjs)
 * registers both. It is imported after tfjs-core, whose engine it registers with (tfjs keeps the
 * engine and registries on the global object), so the `@tensorflow/tfjs` bundle, with its layers,
 * converter, data and webgl packages, is not needed.
 */
import * as tf from "@tensorflow/tfjs-core";
import "#tfjs-registrations";

export { tf };
