// What every addon build script of @pbrl/core-tensor shares (native/build.mjs for the OpenBLAS
// addon; another addon's build script imports the same): finding node-gyp and the Node headers
// without a network, building once per change of inputs in a staging directory, checking that
// the result loads, and the command every "not built" message names.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";

/**
 * The one command that (re)builds the addons in a project that installed the packages: it reruns
 * @pbrl/core-tensor's install step (native/build-addons.mjs). npm runs it in npm and pnpm projects
 * alike, whether or not pnpm was allowed to run the build; `--foreground-scripts` shows the
 * build's one-line result, which npm otherwise hides. src/addon-hints.ts holds the same text for
 * the messages pbrl prints at run time.
 */
export const REBUILD_COMMAND = "npm rebuild @pbrl/core-tensor --foreground-scripts";
/** The same in a checkout of pbrl's own repository, where the package is a workspace project. */
export const WORKSPACE_REBUILD_COMMAND = "pnpm --filter @pbrl/core-tensor build:addons";
/** How to rebuild, for the end of a "not built" line. */
export const REBUILD_HINT = `run \`${REBUILD_COMMAND}\` (in a pbrl checkout: \`${WORKSPACE_REBUILD_COMMAND}\`)`;

/** Prints one line about an addon on stderr, so it shows in pnpm's install output and never pollutes anything parsing stdout. */
export function say(addon, line) {
  process.stderr.write(`${addon}: ${line}\n`);
}

/** node-gyp's JS entry: the one the package manager running us points at, else npm's bundled copy. */
export function findNodeGyp() {
  const candidates = [];
  const fromEnv = process.env["npm_config_node_gyp"];
  if (fromEnv) candidates.push(fromEnv);
  // npm sets npm_config_node_gyp, pnpm does not; npm's copy sits in its own node_modules next to the node binary.
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

/** The install prefix holding this Node's headers (include/node/node_api.h), so node-gyp never downloads them. */
export function findNodeDir() {
  const candidates = [path.resolve(path.dirname(process.execPath), ".."), "/usr", "/usr/local"];
  for (const c of candidates) {
    if (existsSync(path.join(c, "include", "node", "node_api.h")) && existsSync(path.join(c, "include", "node", "common.gypi"))) return c;
  }
  return undefined;
}

/** The line of compiler or loader output that names the problem, for a one-line summary. */
export function reasonFrom(output) {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const hit =
    lines.find((l) => /cannot find -l|fatal error|command not found/i.test(l)) ??
    lines.find((l) => /not found|No such file|cannot open shared object/i.test(l)) ??
    lines.find((l) => /\berror\b/i.test(l));
  return (hit ?? lines[lines.length - 1] ?? "unknown error").slice(0, 240);
}

/**
 * Why the C++ compiler cannot link a program against `libraries` (e.g. "cannot find -lopenblas",
 * or no compiler), or undefined when it can or when that cannot be told (node-gyp then says what
 * is wrong). Takes a fraction of a second, where compiling an addon and failing at its link takes
 * many: the install step runs once per linked copy in some layouts.
 */
export function missingLibrary(libraries) {
  if (libraries.length === 0) return undefined;
  const cxx = process.env["CXX"] || "g++"; // make's default, which node-gyp's Makefiles use
  const ldflags = (process.env["LDFLAGS"] ?? "").split(/\s+/).filter(Boolean);
  const r = spawnSync(cxx, ["-x", "c++", "-", ...ldflags, ...libraries.map((l) => `-l${l}`), "-o", process.platform === "win32" ? "NUL" : "/dev/null"], {
    input: "int main() { return 0; }\n",
    encoding: "utf8",
  });
  // On Linux node-gyp's Makefiles compile with this same compiler, so its absence is certain failure.
  if (r.error !== undefined) return process.platform === "linux" && r.error.code === "ENOENT" ? `no C++ compiler (${cxx} not found)` : undefined;
  if (r.status === 0) return undefined;
  const output = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  return /cannot find -l|library not found/i.test(output) ? reasonFrom(output) : undefined;
}

/** Compiler settings from the environment that change what a build produces. */
const COMPILER_ENV = ["CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH"];

/** Every file under `p` (a file or a directory), sorted, as paths relative to `root`. */
function filesUnder(root, p) {
  const full = path.join(root, p);
  if (!statSync(full).isDirectory()) return [p];
  return readdirSync(full)
    .sort()
    .flatMap((name) => filesUnder(root, path.join(p, name)));
}

/** A digest of what a build depends on: its input files, its options, this Node and the compiler settings. */
function inputsDigest(addonDir, inputs, gypArgs, env) {
  const hash = createHash("sha256");
  for (const file of inputs.flatMap((input) => filesUnder(addonDir, input)))
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(addonDir, file)))
      .update("\0");
  const settings = Object.fromEntries(COMPILER_ENV.map((k) => [k, process.env[k] ?? ""]));
  hash.update(JSON.stringify({ gypArgs, env, settings, node: process.version, platform: process.platform, arch: process.arch }));
  return hash.digest("hex");
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `fn` holding a lock on one addon's build: package managers may run the install step of
 * one package directory several times, even at once (`npm rebuild` in a pnpm project runs it once
 * per dependent that links the package), and the later runs should find the first one's build
 * instead of repeating it. A lock left by a process that is gone is taken over.
 */
function withBuildLock(lockDir, fn) {
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      let owner = NaN;
      try {
        owner = Number(readFileSync(path.join(lockDir, "pid"), "utf8"));
      } catch {
        // the owner has not written its pid yet
      }
      let alive;
      if (Number.isInteger(owner)) {
        try {
          process.kill(owner, 0);
          alive = true;
        } catch (err) {
          alive = err.code === "EPERM"; // another user's process
        }
      } else {
        // An owner writes its pid right after taking the lock; one without, for long, died in between.
        alive = Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 10_000;
      }
      if (alive) sleep(250);
      else rmSync(lockDir, { recursive: true, force: true });
    }
  }
  writeFileSync(path.join(lockDir, "pid"), String(process.pid));
  try {
    return fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * Loads the addon in a fresh Node process (so its shared libraries must resolve at run time, as
 * they will for pbrl) and runs `probe`, an expression over the loaded addon `a` whose value is
 * printed. Returns `{ ok: true, value }` or `{ ok: false, reason }`.
 */
export function probeAddon(addonPath, probe, env = {}) {
  const r = spawnSync(process.execPath, ["-e", `const a = require(${JSON.stringify(addonPath)}); console.log(${probe});`], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  if (r.status === 0) return { ok: true, value: r.stdout.trim() };
  return { ok: false, reason: reasonFrom(`${r.stderr ?? ""}${r.error ? String(r.error) : ""}`) };
}

/**
 * Builds `<addonDir>/build/Release/<target>.node` with `node-gyp rebuild` from `inputs` (paths
 * under addonDir: binding.gyp and the sources) and `shared` (folders beside addonDir that
 * binding.gyp's include_dirs name, e.g. "../shared-cpp": read in place, never copied), with
 * `gypArgs` and `env` added for addons that need them (e.g. where a library lives), then loads it
 * and evaluates `probe` (see
 * {@link probeAddon}). `libraries` (names for `-l`) are checked first, so that a missing one
 * fails at once. The compiler output goes to `<addonDir>/build/build.log`.
 *
 * An addon built from the same inputs (files, options, Node, compiler settings) that still loads
 * is kept: `{ status: "up-to-date", value }`. Otherwise `{ status: "built", seconds, value }`,
 * `{ status: "failed", reason, logPath }` (nothing built; a previous addon is removed, so a stale
 * one is never left behind) or `{ status: "does-not-load", reason }`.
 *
 * `node-gyp rebuild` empties its build directory first, so it builds in a directory of this
 * process's own and the finished addon is renamed into place: anything loading the addon
 * meanwhile (test suites running beside an install or a rebuild) finds the previous one, never
 * none. That directory is a sibling of addonDir, so the relative paths to `shared` folders in
 * binding.gyp mean the same there as in addonDir.
 */
export function buildAddon({ addonDir, target, probe, inputs = ["binding.gyp", "src"], shared = [], libraries = [], gypArgs = [], env = {} }) {
  const buildDir = path.join(addonDir, "build");
  const addonPath = path.join(buildDir, "Release", `${target}.node`);
  const stampPath = path.join(buildDir, `${target}.inputs.sha256`);
  const logPath = path.join(buildDir, "build.log");
  mkdirSync(buildDir, { recursive: true });
  return withBuildLock(path.join(buildDir, `.${target}.lock`), () => {
    const digest = inputsDigest(addonDir, [...inputs, ...shared], gypArgs, env);
    if (existsSync(addonPath) && existsSync(stampPath) && readFileSync(stampPath, "utf8") === digest) {
      const loads = probeAddon(addonPath, probe, env);
      if (loads.ok) return { status: "up-to-date", addonPath, value: loads.value };
    }
    rmSync(stampPath, { force: true });
    const gyp = findNodeGyp();
    const cannot = gyp === undefined ? "node-gyp not found (it ships with npm and pnpm)" : missingLibrary(libraries);
    if (cannot !== undefined) {
      rmSync(addonPath, { force: true });
      writeFileSync(logPath, `${cannot}\n`);
      return { status: "failed", addonPath, logPath, reason: cannot };
    }
    const nodedir = findNodeDir();
    const args = [...gyp.args, "rebuild", "--release", "--jobs", "max", ...gypArgs];
    if (nodedir !== undefined) args.push(`--nodedir=${nodedir}`);
    const t0 = Date.now();
    const staging = path.join(path.dirname(addonDir), `.build-${target}-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging);
    for (const input of inputs) cpSync(path.join(addonDir, input), path.join(staging, input), { recursive: true });
    const r = spawnSync(gyp.cmd, args, { cwd: staging, encoding: "utf8", env: { ...process.env, npm_config_loglevel: "error", ...env } });
    const output = `$ ${gyp.cmd} ${args.join(" ")}\n${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}`;
    const built = path.join(staging, "build", "Release", `${target}.node`);
    mkdirSync(path.dirname(addonPath), { recursive: true });
    writeFileSync(logPath, output);
    const ok = r.status === 0 && existsSync(built);
    if (ok) renameSync(built, addonPath);
    rmSync(staging, { recursive: true, force: true });
    if (!ok) {
      rmSync(addonPath, { force: true });
      return { status: "failed", addonPath, logPath, reason: reasonFrom(output) };
    }
    const seconds = (Date.now() - t0) / 1000;
    const loads = probeAddon(addonPath, probe, env);
    if (!loads.ok) return { status: "does-not-load", addonPath, reason: loads.reason };
    writeFileSync(stampPath, digest);
    return { status: "built", addonPath, seconds, value: loads.value };
  });
}
