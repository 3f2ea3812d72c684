#!/usr/bin/env node
// Builds pbrl's native addon (native/build/Release/pbrl_native.node) with node-gyp; run by
// `pnpm install` (core-tensor's `prepare` script) and by hand: `node native/build.mjs`.
//
// It never fails the install: pbrl runs without the addon (the `native` backend falls back to
// `wasm`), so when the build is impossible (no OpenBLAS, no C++ compiler, no node-gyp) it prints
// one line saying why and what to install, keeps the full compiler output in
// native/build/build.log, and exits 0. `PBRL_NATIVE_BUILD=off` skips the build.
//
// Offline: node-gyp is the copy pnpm or npm ship (no download), and the Node headers are those
// installed next to this `node` binary (`--nodedir`), so node-gyp never fetches a header tarball.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const buildDir = path.join(here, "build");
const addonPath = path.join(buildDir, "Release", "pbrl_native.node");
const logPath = path.join(buildDir, "build.log");
const FALLBACK =
  "pbrl will use the wasm backend (slower). To get the native backend install OpenBLAS and a C++ compiler " +
  "(Debian/Ubuntu: apt-get install -y libopenblas-dev g++ make python3) and run `pnpm install` again; see docs/native-backend.md";

function say(line) {
  // stderr, so it shows in pnpm's install output and never pollutes anything parsing stdout.
  process.stderr.write(`pbrl native addon: ${line}\n`);
}

if (process.env["PBRL_NATIVE_BUILD"] === "off") {
  say(`not built (PBRL_NATIVE_BUILD=off); ${FALLBACK}`);
  process.exit(0);
}

/** node-gyp's JS entry: the one the package manager running us points at, else npm's bundled copy. */
function findNodeGyp() {
  const candidates = [];
  const fromEnv = process.env["npm_config_node_gyp"];
  if (fromEnv) candidates.push(fromEnv);
  // pnpm and npm both ship node-gyp; npm's sits in its own node_modules next to the node binary.
  const prefix = path.resolve(path.dirname(process.execPath), "..");
  candidates.push(path.join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  candidates.push(path.join(path.dirname(process.execPath), "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  try {
    candidates.push(createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js"));
  } catch {
    // not a dependency here; the candidates above remain
  }
  for (const c of candidates) if (c.endsWith(".js") && existsSync(c)) return { cmd: process.execPath, args: [c] };
  // A `node-gyp` executable on PATH (pnpm puts its bundled one there for lifecycle scripts).
  const which = spawnSync(process.platform === "win32" ? "where" : "which", ["node-gyp"], { encoding: "utf8" });
  const onPath = which.status === 0 ? which.stdout.split("\n")[0].trim() : "";
  return onPath ? { cmd: onPath, args: [] } : undefined;
}

/** The install prefix holding this Node's headers (include/node/node_api.h), if any. */
function findNodeDir() {
  const candidates = [path.resolve(path.dirname(process.execPath), ".."), "/usr", "/usr/local"];
  for (const c of candidates) {
    if (existsSync(path.join(c, "include", "node", "node_api.h")) && existsSync(path.join(c, "include", "node", "common.gypi"))) return c;
  }
  return undefined;
}

/** The last line of the compiler output that names the problem, for the one-line summary. */
function reasonFrom(output) {
  const lines = output.split("\n").map((l) => l.trim()).filter(Boolean);
  const hit =
    lines.find((l) => /cannot find -lopenblas|openblas/i.test(l) && /error|cannot|not found/i.test(l)) ??
    lines.find((l) => /not found|No such file|command not found|fatal error/i.test(l)) ??
    lines.find((l) => /\berror\b/i.test(l));
  return (hit ?? lines[lines.length - 1] ?? "unknown error").slice(0, 240);
}

const gyp = findNodeGyp();
if (gyp === undefined) {
  say(`not built: node-gyp not found (it ships with npm and pnpm); ${FALLBACK}`);
  process.exit(0);
}
const nodedir = findNodeDir();
const args = [...gyp.args, "rebuild", "--release", "--jobs", "max"];
if (nodedir !== undefined) args.push(`--nodedir=${nodedir}`);
const t0 = Date.now();
// `node-gyp rebuild` empties its build directory first, so it builds in a directory of this
// process's own and the finished addon is renamed into place: anything loading the addon
// meanwhile (the test suites, while `pnpm pack` runs this script as core-tensor's `prepare`)
// finds the previous one, never none.
const staging = path.join(here, `.build-${process.pid}`);
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging);
cpSync(path.join(here, "binding.gyp"), path.join(staging, "binding.gyp"));
cpSync(path.join(here, "src"), path.join(staging, "src"), { recursive: true });
const r = spawnSync(gyp.cmd, args, { cwd: staging, encoding: "utf8", env: { ...process.env, npm_config_loglevel: "error" } });
const output = `$ ${gyp.cmd} ${args.join(" ")}\n${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}`;
const built = path.join(staging, "build", "Release", "pbrl_native.node");
mkdirSync(path.dirname(addonPath), { recursive: true });
writeFileSync(logPath, output);
const ok = r.status === 0 && existsSync(built);
if (ok) renameSync(built, addonPath);
rmSync(staging, { recursive: true, force: true });
if (!ok) {
  rmSync(addonPath, { force: true }); // never leave a stale addon behind a failed rebuild
  say(`not built (${reasonFrom(output)}; full log: ${path.relative(process.cwd(), logPath)}); ${FALLBACK}`);
  process.exit(0);
}

// Built: check that it loads (libopenblas.so resolvable at run time) and say what it links to.
// (Which OpenBLAS kernels run is decided when pbrl loads it; the backend line names them.)
const check = spawnSync(
  process.execPath,
  ["-e", `const a = require(${JSON.stringify(addonPath)}); const i = a.init(1); console.log(i.blasConfig.split(" ").slice(0, 2).join(" "));`],
  { encoding: "utf8" },
);
if (check.status !== 0) {
  say(`built but does not load (${reasonFrom(check.stderr ?? "")}); ${FALLBACK}`);
  process.exit(0);
}
say(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s against ${check.stdout.trim()}: the native backend is available`);
