/**
 * The single TensorFlow.js instance every pbrl package uses.
 *
 * `@tensorflow/tfjs-core` alone registers no gradient functions when loaded from Node (its
 * per-file ESM build is not loadable by Node, and its CommonJS bundle leaves gradients out), so
 * the full `@tensorflow/tfjs` bundle is imported once for that side effect. Both resolve to the
 * same engine, which tfjs keeps on the global object.
 */
import "@tensorflow/tfjs";
import * as tf from "@tensorflow/tfjs-core";

export { tf };
