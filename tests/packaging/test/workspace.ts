// Where the workspace keeps what the packaging suites use: the publishable packages, the tiny
// model fixture, and whether this machine must be able to build the native addon.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../../..");

export interface PackageManifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  scripts?: Record<string, string>;
}

export function readManifest(dir: string): PackageManifest {
  return JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as PackageManifest;
}

/** Every publishable package of the workspace: packages/* and the CLI. */
export const PUBLISHABLE = [...readdirSync(path.join(ROOT, "packages")).map((d) => `packages/${d}`), "apps/cli"].map((dir) => {
  const { name, version } = readManifest(path.join(ROOT, dir));
  return { dir: path.join(ROOT, dir), name, version };
});

/** What the TypeScript consumer projects install beside the packages, at the workspace's versions. */
export const CONSUMER_TOOLS: Record<string, string> = { "@types/node": "20.19.43", typescript: "5.9.3" };

export const FIXTURE = path.join(ROOT, "tests/test-fixtures/models/tiny-llama");

/**
 * The native addon must build in a scratch project when CI says OpenBLAS is here
 * (PBRL_REQUIRE_NATIVE=1), or when the workspace's own install built it on this machine;
 * otherwise a project without it must still install and say how to get it.
 */
export const NATIVE_REQUIRED =
  process.env["PBRL_REQUIRE_NATIVE"] === "1" || existsSync(path.join(ROOT, "packages/core-tensor/native/build/Release/pbrl_native.node"));

/**
 * The libtorch addon must build in a scratch project when CI says libtorch is here
 * (PBRL_REQUIRE_LIBTORCH=1, with PBRL_PYTHON or PBRL_LIBTORCH naming it); otherwise the install
 * must say why it did not build and how to get it.
 */
export const LIBTORCH_REQUIRED = process.env["PBRL_REQUIRE_LIBTORCH"] === "1";

/** npm's arguments in the command every "addon not built" message names (packages/core-tensor/src/addon-hints.ts). */
export const REBUILD_ARGS = ["rebuild", "@pbrl/core-tensor", "--foreground-scripts"];
export const REBUILD_COMMAND = ["npm", ...REBUILD_ARGS].join(" ");
