/**
 * Where `pbrl convert` writes, decided before anything is loaded or written: a new folder, an
 * empty one, or one that holds only an earlier `pbrl convert` output (its marker file lists what
 * it wrote). Never the source checkpoint, a folder around or inside it, a file, or a folder with
 * anyone else's files: those are refused with the fix, since replacing them would destroy data.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { isWithin, resolvedPath } from "@pbrl/core-tensor";
import { UsageError } from "../io.js";

/** Written last into every folder convert makes; lets a later convert replace that folder. */
export const CONVERT_MARKER = ".pbrl-convert.json";

export interface ConvertOut {
  /** Absolute path of --out. */
  dir: string;
  /** What is there now: nothing, an empty folder, or an earlier convert output (replaced as a whole). */
  existing: "none" | "empty" | "earlier";
}

/** The files an earlier convert listed in its marker, or undefined when `dir` has no valid marker. */
function markedFiles(dir: string): Set<string> | undefined {
  try {
    const m = JSON.parse(readFileSync(path.join(dir, CONVERT_MARKER), "utf8")) as { written_by?: unknown; files?: unknown };
    if (m.written_by !== "pbrl convert" || !Array.isArray(m.files) || !m.files.every((f) => typeof f === "string")) return undefined;
    return new Set([...(m.files as string[]), CONVERT_MARKER]);
  } catch {
    return undefined;
  }
}

const NEW_FOLDER = "Choose a new or empty folder for --out";

/**
 * Checks --out against the source checkpoint folder (when known: a local path, or where a hub id
 * was found) and what is already there. Reads only.
 */
export function checkConvertOut(out: string, sourceDir: string | undefined): ConvertOut {
  const dir = path.resolve(out);
  const real = resolvedPath(dir);
  if (sourceDir !== undefined) {
    const src = resolvedPath(sourceDir);
    if (real === src)
      throw new UsageError(
        `pbrl convert: --out ${out} is the source checkpoint folder; writing there would replace the original weights. ${NEW_FOLDER}, e.g. --out ${path.basename(src)}-converted`,
      );
    if (isWithin(real, src))
      throw new UsageError(
        `pbrl convert: --out ${out} is inside the source checkpoint folder ${sourceDir}; pbrl convert does not write into the checkpoint it reads. ${NEW_FOLDER} outside it`,
      );
    if (isWithin(src, real))
      throw new UsageError(
        `pbrl convert: --out ${out} contains the source checkpoint folder ${sourceDir}; replacing it would delete the source. ${NEW_FOLDER} that does not contain it`,
      );
  }
  if (!existsSync(dir)) return { dir, existing: "none" };
  const st = lstatSync(dir);
  if (st.isSymbolicLink())
    throw new UsageError(
      `pbrl convert: --out ${out} is a symbolic link, which pbrl convert does not replace. Give the folder it points to, or choose a new or empty folder`,
    );
  if (!st.isDirectory())
    throw new UsageError(`pbrl convert: --out ${out} is an existing file, not a folder; pbrl convert never overwrites a file. ${NEW_FOLDER}`);
  if (real === resolvedPath(process.cwd()))
    throw new UsageError(`pbrl convert: --out ${out} is the current directory, which pbrl convert does not replace. ${NEW_FOLDER}, e.g. --out converted`);
  const entries = readdirSync(dir);
  if (entries.length === 0) return { dir, existing: "empty" };
  const marked = markedFiles(dir);
  const foreign = entries.filter((e) => marked === undefined || !marked.has(e) || !lstatSync(path.join(dir, e)).isFile());
  if (foreign.length > 0) {
    const shown = foreign.slice(0, 5).join(", ") + (foreign.length > 5 ? `, … (${foreign.length} in all)` : "");
    throw new UsageError(
      `pbrl convert: --out ${out} already holds files that pbrl convert did not write (${shown}); it never deletes them. ${NEW_FOLDER}, or empty this one yourself`,
    );
  }
  return { dir, existing: "earlier" };
}

async function fsyncDir(dir: string): Promise<void> {
  try {
    const h = await fs.open(dir, "r");
    await h.sync().finally(() => h.close());
  } catch {
    // Some filesystems refuse fsync on folders; the rename is atomic all the same.
  }
}

/**
 * Builds the output in a hidden temporary folder beside --out (`fill` writes the checkpoint
 * there), adds the marker, and renames it into place; an earlier output is swapped out only
 * then. On failure or SIGINT/SIGTERM the temporary folder is removed and --out is as it was.
 */
export async function writeConvertOut(target: ConvertOut, source: string | undefined, fill: (dir: string) => Promise<void>): Promise<void> {
  const parent = path.dirname(target.dir);
  await fs.mkdir(parent, { recursive: true });
  const staging = await fs.mkdtemp(path.join(parent, `.${path.basename(target.dir)}.pbrl-convert-`));
  const built = path.join(staging, "checkpoint");
  const previous = path.join(staging, "previous");
  // Only here can --out be briefly missing (an earlier output moved aside): put it back.
  const abandon = () => {
    if (existsSync(previous) && !existsSync(target.dir)) renameSync(previous, target.dir);
    rmSync(staging, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    abandon();
    process.stderr.write(`pbrl convert: ${signal} received; stopped, ${target.dir} left as it was\n`);
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await fill(built);
    const files = readdirSync(built);
    await fs.writeFile(path.join(built, CONVERT_MARKER), JSON.stringify({ written_by: "pbrl convert", source, files }, null, 2) + "\n");
    if (target.existing !== "none") {
      // Checked again: files may have appeared in --out since the first check.
      checkConvertOut(target.dir, undefined);
      await fs.rename(target.dir, previous);
    }
    await fs.rename(built, target.dir);
    await fsyncDir(parent);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    abandon();
  }
}
