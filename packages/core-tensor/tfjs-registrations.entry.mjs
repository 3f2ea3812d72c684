// What bundle-tfjs-registrations.mjs bundles: the two side-effect modules `@tensorflow/tfjs`'s
// own entry imports beside `@tensorflow/tfjs-core`.
import "@tensorflow/tfjs-core/dist/register_all_gradients.js";
import "@tensorflow/tfjs-core/dist/public/chained_ops/register_all_chained_ops.js";
