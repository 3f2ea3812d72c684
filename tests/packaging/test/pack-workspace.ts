// Vitest global setup: packs every publishable package once for both consumer suites (pnpm and
// npm), with `pnpm pack`, as a publish would: workspace: ranges become versions and only `files`
// ship. Then it serves them on 127.0.0.1 as a package registry, together with every third-party
// package they need at exactly the version the workspace's lockfile installed (taken from the
// workspace's node_modules), so both consumers resolve the lockfile's versions: a newer release on
// the public registry changes nothing, and no install needs the network or a warm store.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
import { installedDependencies, tarInstalled } from "./installed-dependencies.js";
import { startLoopbackRegistry, type RegistryPackage } from "./loopback-registry.js";
import { CONSUMER_TOOLS, PUBLISHABLE, type PackageManifest } from "./workspace.js";

export interface PackedPackage {
  name: string;
  version: string;
  /** The package's directory in the workspace. */
  dir: string;
  tarball: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    packedPackages: PackedPackage[];
    /** The loopback registry's URL (with a trailing slash). */
    registryUrl: string;
    /** Paths asked of the registry that it does not have, read by a failing install's error. */
    registryMissesFile: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = mkdtempSync(path.join(tmpdir(), "pbrl-packs-"));
  const packs = path.join(work, "packed");
  const thirdPartyDir = path.join(work, "third-party");
  mkdirSync(packs);
  mkdirSync(thirdPartyDir);
  const packed = PUBLISHABLE.map((p) => {
    execFileSync("pnpm", ["pack", "--pack-destination", packs], { cwd: p.dir, stdio: ["ignore", "pipe", "pipe"] });
    const tarball = path.join(packs, `${p.name.replace("@", "").replace("/", "-")}-${p.version}.tgz`);
    if (!existsSync(tarball)) throw new Error(`pnpm pack made no ${tarball}`);
    return { ...p, tarball };
  });
  const served: RegistryPackage[] = packed.map((p) => ({
    // The packed manifest, whose workspace: ranges pnpm pack replaced by versions.
    manifest: JSON.parse(execFileSync("tar", ["-xzOf", p.tarball, "package/package.json"], { encoding: "utf8" })) as PackageManifest,
    tarball: p.tarball,
  }));
  // The pnpm consumer also type-checks with TypeScript and Node's typings (as in tests/packaging).
  const consumerTools = { dir: path.resolve(import.meta.dirname, ".."), manifest: { name: "consumer", version: "0.0.0", dependencies: CONSUMER_TOOLS } };
  const queue = installedDependencies([...packed.map((p) => p.dir), consumerTools], (name) => packed.some((p) => p.name === name));
  await Promise.all(
    [0, 1].map(async () => {
      for (let pkg = queue.shift(); pkg !== undefined; pkg = queue.shift()) {
        const tarball = path.join(thirdPartyDir, `${pkg.manifest.name.replace("/", "+")}-${pkg.manifest.version}.tgz`);
        await tarInstalled(pkg, tarball);
        served.push({ manifest: pkg.manifest, tarball });
      }
    }),
  );
  const missesFile = path.join(work, "registry-misses.txt");
  const registry = await startLoopbackRegistry(served, missesFile);
  project.provide("packedPackages", packed);
  project.provide("registryUrl", registry.url);
  project.provide("registryMissesFile", missesFile);
  return async () => {
    await registry.close();
    rmSync(work, { recursive: true, force: true });
  };
}
