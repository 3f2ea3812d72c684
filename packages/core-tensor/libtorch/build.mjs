#!/usr/bin/env node
// Builds pbrl's libtorch addon (libtorch/build/Release/pbrl_libtorch.node) against the libtorch
// it finds, with node-gyp: run by @pbrl/core-tensor's install step (native/build-addons.mjs), by
// the rebuild command every "not built" message names, and by hand: `node libtorch/build.mjs`.
//
// libtorch is looked for, in order, in PBRL_LIBTORCH (a folder with include/ and lib/: the
// libtorch archive from pytorch.org, or a `torch` Python package's folder), then in the `torch`
// package of PBRL_PYTHON, else of `python3`. Nothing is downloaded. When none is found the addon
// is not built and this says so in one line; pbrl runs on its other backends. A CUDA libtorch
// (lib/libtorch_cuda.so present) gives an addon that also places tensors on CUDA devices.
// `PBRL_LIBTORCH=off` skips the build.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { buildAddon, missingLibrary, REBUILD_HINT, say } from "../native/addon-builder.mjs";

const ADDON = "pbrl libtorch addon";
const HOW =
  "set PBRL_LIBTORCH to a libtorch folder (the archive from pytorch.org, or a torch package folder), or install PyTorch for " +
  `python3 (or the Python in PBRL_PYTHON): pip install torch; then ${REBUILD_HINT}; see pbrl's docs/libtorch-backend.md`;

/** Whether `dir` holds a usable libtorch: its headers and its core libraries. */
function isLibtorch(dir) {
  const lib = path.join(dir, "lib");
  const so = process.platform === "darwin" ? ".dylib" : ".so";
  return existsSync(path.join(dir, "include", "ATen", "ATen.h")) && ["libtorch", "libtorch_cpu", "libc10"].every((l) => existsSync(path.join(lib, l + so)));
}

/** The torch package folder of a Python interpreter, or why there is none. */
function torchOfPython(python) {
  const r = spawnSync(python, ["-c", "import os, torch; print(os.path.dirname(torch.__file__))"], { encoding: "utf8" });
  if (r.error !== undefined) return { reason: `${python} not found` };
  if (r.status !== 0) return { reason: `${python} has no torch package` };
  return { dir: r.stdout.trim() };
}

/** Where libtorch is, and what was looked at. */
function findLibtorch() {
  const fromEnv = process.env["PBRL_LIBTORCH"] ?? "";
  if (fromEnv !== "") {
    return isLibtorch(fromEnv) ? { dir: fromEnv } : { reason: `PBRL_LIBTORCH=${fromEnv} is not a libtorch folder (no include/ATen/ATen.h and lib/libtorch*)` };
  }
  const python = process.env["PBRL_PYTHON"] || "python3";
  const found = torchOfPython(python);
  if (found.dir === undefined) return { reason: `no libtorch: PBRL_LIBTORCH is not set and ${found.reason}` };
  return isLibtorch(found.dir) ? found : { reason: `the torch package at ${found.dir} has no headers and libraries (include/, lib/)` };
}

/** The file name of the OpenMP runtime in libtorch's lib/ when ATen parallelises with OpenMP (the
 * torch wheel's libgomp.so.1, the archive's hashed libgomp-*.so.1), else "". */
function openmpRuntime(dir) {
  const config = path.join(dir, "include", "ATen", "Config.h");
  if (!existsSync(config) || !/#define AT_PARALLEL_OPENMP 1/.test(readFileSync(config, "utf8"))) return "";
  return readdirSync(path.join(dir, "lib")).find((f) => /^libgomp[-\w]*\.so(\.\d+)*$/.test(f)) ?? "";
}

if (process.env["PBRL_LIBTORCH"] === "off") {
  say(ADDON, "not built (PBRL_LIBTORCH=off); pbrl runs without the libtorch backend");
  process.exit(0);
}
const where = findLibtorch();
if (where.dir === undefined) {
  say(ADDON, `not built (${where.reason}); pbrl runs without the libtorch backend (nothing else changes). To get it, ${HOW}`);
  process.exit(0);
}
const dir = path.resolve(where.dir);
const cuda = existsSync(path.join(dir, "lib", process.platform === "darwin" ? "libtorch_cuda.dylib" : "libtorch_cuda.so"));
const addonDir = path.dirname(fileURLToPath(import.meta.url));
// Float32 products on the CPU may go to OpenBLAS where it is installed (and measures faster than
// ATen's at load time): linked when the compiler finds it, otherwise left out.
const openblas = missingLibrary(["openblas"]) === undefined;
// ATen's parallel_for is inline: pbrl's own parallel loops (AdamW, the fused loss, few-row
// products) split across threads only when compiled with OpenMP and linked to the OpenMP runtime
// libtorch itself uses (one thread pool). Without it they run on one thread; measured on a 2-core
// Zen 5, a SmolLM2-135M bf16 step spent about 0.1 s in a one-thread AdamW.
const openmp = openmpRuntime(dir);
// NCCL process groups (CUDA tensors between GPUs) compile against c10d's ProcessGroupNCCL.hpp,
// which includes CUDA's, cuBLAS's, cuSPARSE's, cuSOLVER's and NCCL's headers: in a CUDA torch
// wheel they come with the nvidia-* packages beside it (site-packages/nvidia/*/include), else
// from a CUDA toolkit (CUDA_HOME, /usr/local/cuda).
function cudaIncludeDirs(torchDir) {
  const dirs = [];
  const nvidia = path.join(torchDir, "..", "nvidia");
  if (existsSync(nvidia))
    for (const d of readdirSync(nvidia)) {
      const inc = path.join(nvidia, d, "include");
      if (existsSync(inc)) dirs.push(inc);
    }
  for (const home of [process.env["CUDA_HOME"], "/usr/local/cuda"])
    if (home && existsSync(path.join(home, "include", "cuda_runtime_api.h"))) dirs.push(path.join(home, "include"));
  return dirs;
}
const cudaIncludes = cuda ? cudaIncludeDirs(dir) : [];
const ncclHeaders = cudaIncludes.some((d) => existsSync(path.join(d, "nccl.h"))) && cudaIncludes.some((d) => existsSync(path.join(d, "cuda_runtime_api.h")));
const build = (c10d, nccl = false) =>
  buildAddon({
    addonDir,
    target: "pbrl_libtorch",
    // Shared with the native addon (binding.gyp's include_dirs): the vectorisable exp, OpenBLAS,
    // the few-rows products and the RMSNorm gradient.
    shared: ["../shared-cpp"],
    probe: `(i => "libtorch " + i.torchVersion + (i.cuda ? " (CUDA)" : " (CPU)"))(a.init(1))`,
    env: {
      PBRL_LIBTORCH_DIR: dir,
      PBRL_LIBTORCH_CUDA: cuda ? "1" : "0",
      PBRL_LIBTORCH_OPENBLAS: openblas ? "1" : "0",
      PBRL_LIBTORCH_OPENMP: openmp,
      PBRL_LIBTORCH_C10D: c10d ? "1" : "0",
      PBRL_LIBTORCH_NCCL: nccl ? "1" : "0",
      PBRL_LIBTORCH_CUDA_INCLUDES: nccl ? cudaIncludes.join(" ") : "",
    },
  });
let r = build(true, ncclHeaders);
if (cuda && !ncclHeaders)
  say(ADDON, "a CUDA libtorch without CUDA and NCCL headers beside it: process groups get Gloo only (CUDA tensors through host memory)");
if (ncclHeaders && r.status !== "built" && r.status !== "up-to-date") {
  say(ADDON, `the NCCL process groups did not build or load (${r.reason ?? r.status}; log: ${r.logPath}); building with Gloo only`);
  r = build(true);
}
// Process groups (src/distributed.cc) need c10d's Gloo backend in libtorch_cpu, which every
// pytorch.org build has; a libtorch built without it still gets the tensor backend, without groups.
// (A missing symbol fails the link, or only the load: a shared object may link with it undefined.)
const C10D = /distributed\.cc|ProcessGroupGloo|c10d/;
const c10dFailed = (res) =>
  (res.status === "failed" && existsSync(res.logPath) && C10D.test(readFileSync(res.logPath, "utf8"))) ||
  (res.status === "does-not-load" && C10D.test(res.reason));
if (c10dFailed(r)) {
  say(ADDON, "this libtorch cannot build process groups (c10d with Gloo; see the build log); building without them");
  r = build(false);
}
if (r.status === "failed") say(ADDON, `not built against ${dir} (${r.reason}; full log: ${r.logPath}); ${HOW}`);
else if (r.status === "does-not-load") say(ADDON, `built against ${dir} but does not load (${r.reason}); ${HOW}`);
else if (r.status === "up-to-date") say(ADDON, `up to date (built from these sources before) against ${r.value} at ${dir}: the libtorch backend is available`);
else say(ADDON, `built in ${r.seconds.toFixed(1)} s against ${r.value} at ${dir}: the libtorch backend is available`);
