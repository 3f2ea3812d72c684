/**
 * Every checkpoint folder carries `manifest.json`: the size and sha256 of each file in it,
 * written last. Resume checks it, so an overwritten agent, edited optimizer state or edited
 * round counter is an error instead of a silently different run.
 */
import { createHash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "@pbrl/core-tensor";
import { CheckpointError } from "./checkpoint-error.js";

export const MANIFEST_FILE = "manifest.json";
const FORMAT = "pbrl-checkpoint-manifest/1";

interface FileEntry {
  bytes: number;
  sha256: string;
}

interface Manifest {
  format: typeof FORMAT;
  files: Record<string, FileEntry>;
}

async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else if (rel !== MANIFEST_FILE) out.push(rel);
  }
  return out.sort();
}

async function describeFile(file: string): Promise<FileEntry> {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest("hex") };
}

/** Writes `<dir>/manifest.json` for every file now under `dir`. */
export async function writeManifest(dir: string): Promise<void> {
  const files: Record<string, FileEntry> = {};
  for (const rel of await listFiles(dir)) files[rel] = await describeFile(path.join(dir, rel));
  const manifest: Manifest = { format: FORMAT, files };
  await writeFileAtomic(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + "\n");
}

/** Checks every file `<dir>/manifest.json` lists: present, same size, same sha256. */
export async function verifyManifest(dir: string, what: string): Promise<void> {
  const file = path.join(dir, MANIFEST_FILE);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await fs.readFile(file, "utf8")) as Manifest;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
    throw new CheckpointError(
      `${what}: ${file} is ${missing ? "missing" : "damaged"}, so the checkpoint's files cannot be checked; it was not written completely by pbrl. Resume from an earlier round folder, or start the run again`,
    );
  }
  if (manifest?.format !== FORMAT || typeof manifest.files !== "object" || manifest.files === null) {
    throw new CheckpointError(`${what}: ${file} is not a pbrl checkpoint manifest (format ${JSON.stringify(manifest?.format)}, expected "${FORMAT}")`);
  }
  for (const [rel, want] of Object.entries(manifest.files)) {
    const target = path.resolve(dir, rel);
    if (!target.startsWith(path.resolve(dir) + path.sep))
      throw new CheckpointError(`${what}: ${file} lists ${JSON.stringify(rel)}, which is outside the checkpoint folder`);
    let got: FileEntry;
    try {
      got = await describeFile(target);
    } catch {
      throw new CheckpointError(
        `${what}: ${target} is missing from the checkpoint (its manifest lists it); resume from an earlier round folder, or start the run again`,
      );
    }
    if (got.bytes !== want.bytes || got.sha256 !== want.sha256) {
      throw new CheckpointError(
        `${what}: ${target} changed after the checkpoint was written (${got.bytes} bytes, sha256 ${got.sha256.slice(0, 12)}…; the manifest has ${want.bytes} bytes, ${String(want.sha256).slice(0, 12)}…). Restore the original file, or resume from an earlier round folder`,
      );
    }
  }
}
