// Builds dist/tfjs-registrations.js: tfjs-core's gradient functions and chained tensor methods
// (`x.add(y)`), which `@tensorflow/tfjs-core`'s Node entry leaves out. tfjs-core ships them only
// as per-file ESM whose extensionless imports Node cannot load, so they are bundled here, as the
// `@tensorflow/tfjs` bundle does for itself; pbrl then needs tfjs-core and its two backends, not
// that bundle with layers, converter, data and webgl (about 200 MB installed). The bundled
// registrations write to the registries tfjs keeps on the global object, so they serve the engine
// `@tensorflow/tfjs-core` creates, which src/tf.ts loads first.
import { writeFileSync } from "node:fs";
import * as path from "node:path";
import { build } from "rolldown";

await build({
  input: path.join(import.meta.dirname, "tfjs-registrations.entry.mjs"),
  platform: "node",
  logLevel: "warn",
  output: { file: path.join(import.meta.dirname, "dist/tfjs-registrations.js"), format: "esm", minify: false },
});
// Typings for `import "#tfjs-registrations"` in dist/tf.d.ts: a module that exports nothing.
writeFileSync(path.join(import.meta.dirname, "dist/tfjs-registrations.d.ts"), "export {};\n");
