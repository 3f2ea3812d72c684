// The third-party packages that the packed packages need, taken from where pnpm installed them
// for the workspace, so that a registry on this machine can serve them to npm without a network.
import { execFile } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { readManifest, type PackageManifest } from "./workspace.js";

export interface InstalledPackage {
  manifest: PackageManifest;
  /** The package's directory as installed (pnpm's virtual store), with exactly its published files. */
  dir: string;
}

/** Node's lookup of `name` from `fromDir` (the node_modules of each ancestor), without `exports`. */
function findInstalled(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    if (path.basename(dir) !== "node_modules") {
      const candidate = path.join(dir, "node_modules", name);
      if (existsSync(path.join(candidate, "package.json"))) return realpathSync(candidate);
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** What npm installs for a package: its dependencies, optional ones when present, and its required peers. */
function neededBy(manifest: PackageManifest): { name: string; optional: boolean }[] {
  const peers = Object.keys(manifest.peerDependencies ?? {}).filter((n) => manifest.peerDependenciesMeta?.[n]?.optional !== true);
  return [
    ...Object.keys(manifest.dependencies ?? {}).map((name) => ({ name, optional: false })),
    ...Object.keys(manifest.optionalDependencies ?? {}).map((name) => ({ name, optional: true })),
    ...peers.map((name) => ({ name, optional: false })),
  ];
}

/**
 * Every package (name and version) that `roots` need, apart from names matching `skip` (the packed
 * packages themselves), found as installed in the workspace. A root is a workspace package
 * directory, or a manifest (a consumer's) whose dependencies are looked up from a given directory.
 */
export function installedDependencies(
  roots: readonly (string | { dir: string; manifest: PackageManifest })[],
  skip: (name: string) => boolean,
): InstalledPackage[] {
  const found = new Map<string, InstalledPackage>();
  const queue = roots.map((r) => (typeof r === "string" ? { dir: r, manifest: readManifest(r) } : r));
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    for (const dep of neededBy(item.manifest)) {
      if (skip(dep.name)) continue;
      const dir = findInstalled(dep.name, item.dir);
      if (dir === undefined) {
        if (dep.optional) continue; // e.g. another platform's binary: npm skips it too
        throw new Error(`${dep.name}, a dependency of ${item.manifest.name}, is not installed in the workspace (run pnpm install)`);
      }
      const manifest = readManifest(dir);
      const key = `${manifest.name}@${manifest.version}`;
      if (found.has(key)) continue;
      found.set(key, { manifest, dir });
      queue.push({ dir, manifest });
    }
  }
  return [...found.values()];
}

const execFileAsync = promisify(execFile);

/**
 * Packs an installed package as a registry tarball (everything under `package/`). Files pnpm's
 * store holds once are hard links to each other (tfjs-backend-wasm's .wasm binaries in dist/ and
 * wasm-out/), and npm drops link entries when it unpacks, so each is archived as a file. The
 * fastest gzip level: these tarballs live for one test run.
 */
export async function tarInstalled(pkg: InstalledPackage, out: string): Promise<void> {
  const args = [
    "-c",
    "--hard-dereference",
    "--use-compress-program=gzip -1",
    "-f",
    out,
    "--exclude=./node_modules",
    "--transform=s,^\\.,package,",
    "-C",
    pkg.dir,
    ".",
  ];
  await execFileAsync("tar", args);
}
