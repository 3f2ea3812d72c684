// Vitest global setup: packs every publishable package once for both consumer suites (pnpm and
// npm), with `pnpm pack`, as a publish would: workspace: ranges become versions and only `files` ship.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
import { PUBLISHABLE } from "./workspace.js";

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
  }
}

export default function setup(project: TestProject): () => void {
  const packs = mkdtempSync(path.join(tmpdir(), "pbrl-packs-"));
  const packed = PUBLISHABLE.map((p) => {
    execFileSync("pnpm", ["pack", "--pack-destination", packs], { cwd: p.dir, stdio: ["ignore", "pipe", "pipe"] });
    const tarball = path.join(packs, `${p.name.replace("@", "").replace("/", "-")}-${p.version}.tgz`);
    if (!existsSync(tarball)) throw new Error(`pnpm pack made no ${tarball}`);
    return { ...p, tarball };
  });
  project.provide("packedPackages", packed);
  return () => rmSync(packs, { recursive: true, force: true });
}
