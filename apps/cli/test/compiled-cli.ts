// Tests that need the CLI as a real process (child processes, signals) run it from JavaScript
// compiled from the current sources into a private folder under node_modules/.cache: node
// cannot run the TypeScript sources, and dist/ may be older than them. The workspace packages
// it imports must be built (packages/*/dist), as `pnpm test` does before testing.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { promisify } from "node:util";

export const run = (file: string, args: string[]) => promisify(execFile)(file, args, { maxBuffer: 1 << 24 });

const CLI = path.resolve(import.meta.dirname, "..");

/** Whether the packages the CLI imports have been built. */
export const packagesBuilt = ["core-tensor", "models", "preference-data", "dpo", "replay", "comparators", "report", "trainers"].every((p) =>
  existsSync(path.resolve(CLI, `../../packages/${p}/dist/index.js`)),
);

/** Compiles the CLI into a fresh folder and returns the path of its main.js, with a cleanup. */
export async function compileCli(): Promise<{ main: string; cleanup: () => void }> {
  const cache = path.join(CLI, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  // dist/ beside a link to the CLI's assets, as in the package: the code finds them at ../../assets.
  const root = mkdtempSync(path.join(cache, "pbrl-cli-test-"));
  const out = path.join(root, "dist");
  symlinkSync(path.join(CLI, "assets"), path.join(root, "assets"));
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  // tsc emits even when another file has a type error (the typecheck task reports those).
  const compiled = await run(process.execPath, [
    tsc,
    "-p",
    path.join(CLI, "tsconfig.build.json"),
    "--outDir",
    out,
    "--declaration",
    "false",
    "--declarationMap",
    "false",
    "--sourceMap",
    "false",
  ]).catch((e: { stdout?: string }) => e);
  const main = path.join(out, "main.js");
  if (!existsSync(main)) throw new Error(`compiling the CLI failed:\n${String(compiled.stdout)}`);
  return { main, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
