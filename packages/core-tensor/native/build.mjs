#!/usr/bin/env node
// Builds pbrl's OpenBLAS addon (native/build/Release/pbrl_native.node) with node-gyp. Run by
// @pbrl/core-tensor's install step (native/build-addons.mjs: `npm install`, `pnpm install` where
// the build is allowed, `pnpm install` in pbrl's workspace), by the rebuild command that every
// "not built" message names (addon-builder.mjs's REBUILD_COMMAND), and by hand: `node native/build.mjs`.
//
// It never fails the install: pbrl runs without the addon (the `native` backend falls back to
// `wasm`), so when the build is impossible (no OpenBLAS, no C++ compiler, no node-gyp) it prints
// one line saying why and what to do, keeps the full compiler output in native/build/build.log,
// and exits 0. `PBRL_NATIVE_BUILD=off` skips the build. An addon already built from the same
// sources, that loads, is kept.
//
// Offline: node-gyp is the copy npm ships (pnpm's lifecycle scripts find it too), and the Node
// headers are those installed next to this `node` binary (`--nodedir`), so nothing is downloaded.
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { buildAddon, REBUILD_HINT, say } from "./addon-builder.mjs";

const ADDON = "pbrl native addon";
const FALLBACK =
  "pbrl will use the wasm backend (slower). To get the native backend install OpenBLAS and a C++ compiler " +
  `(Debian/Ubuntu: apt-get install -y libopenblas-dev g++ make python3), then ${REBUILD_HINT}; see pbrl's docs/native-backend.md`;

if (process.env["PBRL_NATIVE_BUILD"] === "off") {
  say(ADDON, `not built (PBRL_NATIVE_BUILD=off); ${FALLBACK}`);
  process.exit(0);
}

// The probe loads the addon (libopenblas.so resolvable at run time) and names the OpenBLAS it
// links to; which kernels run is decided when pbrl loads it, and the backend line names them.
const r = buildAddon({
  addonDir: path.dirname(fileURLToPath(import.meta.url)),
  target: "pbrl_native",
  libraries: ["openblas"],
  // Shared with the libtorch addon (binding.gyp's include_dirs).
  shared: ["../shared-cpp"],
  probe: `a.init(1).blasConfig.split(" ").slice(0, 2).join(" ")`,
});
if (r.status === "failed") say(ADDON, `not built (${r.reason}; full log: ${r.logPath}); ${FALLBACK}`);
else if (r.status === "does-not-load") say(ADDON, `built but does not load (${r.reason}); ${FALLBACK}`);
else if (r.status === "up-to-date") say(ADDON, `up to date (built from these sources before) against ${r.value}: the native backend is available`);
else say(ADDON, `built in ${r.seconds.toFixed(1)} s against ${r.value}: the native backend is available`);
