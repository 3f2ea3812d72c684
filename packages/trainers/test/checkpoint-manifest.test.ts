// manifest.json on real files: what it lists (every file, sorted, nested with "/", never itself),
// and each way a checkpoint folder fails the check on resume, with the message that says what to do.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointError } from "../src/checkpoint-error.js";
import { MANIFEST_FILE, verifyManifest, writeManifest } from "../src/checkpoint-manifest.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-manifest-"));
// sha256 by sha256sum: printf 'abc' | sha256sum, and of the empty file
const SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const SHA_ABD = "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9";
const SHA_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** A checkpoint-like folder: z.txt ("abc") and sub/deeper/b.bin (empty), with its manifest. */
async function folder(): Promise<string> {
  const d = tmp();
  writeFileSync(path.join(d, "z.txt"), "abc");
  mkdirSync(path.join(d, "sub", "deeper"), { recursive: true });
  writeFileSync(path.join(d, "sub", "deeper", "b.bin"), "");
  await writeManifest(d);
  return d;
}

async function message(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as Error).name).toBe("CheckpointError");
    return (err as Error).message;
  }
  throw new Error("expected a CheckpointError");
}

describe("writeManifest", () => {
  it("lists every file under the folder by its /-joined path, sorted, with its size and sha256, and not manifest.json itself", async () => {
    const d = await folder();
    const want = {
      format: "pbrl-checkpoint-manifest/1",
      files: { "sub/deeper/b.bin": { bytes: 0, sha256: SHA_EMPTY }, "z.txt": { bytes: 3, sha256: SHA_ABC } },
    };
    expect(readFileSync(path.join(d, MANIFEST_FILE), "utf8")).toBe(JSON.stringify(want, null, 2) + "\n");
    // written again with the manifest present: still only the other files
    await writeManifest(d);
    expect(readFileSync(path.join(d, "manifest.json"), "utf8")).toBe(JSON.stringify(want, null, 2) + "\n");
    await expect(verifyManifest(d, "resume_from_checkpoint")).resolves.toBeUndefined();
  });

  it("files are listed by their whole /-joined path, not in the order the folders give them", async () => {
    const d = tmp();
    const names = ["m", "c", "x", "a", "q", "f", "k", "b", "w", "e", "s", "h"];
    for (const n of names) writeFileSync(path.join(d, `${n}.txt`), n);
    mkdirSync(path.join(d, "sub"));
    for (const n of names) writeFileSync(path.join(d, "sub", `${n}.bin`), n);
    // the folder gives "sub" before "sub.txt"; by path, "sub.txt" comes before "sub/…" ("." < "/")
    writeFileSync(path.join(d, "sub.txt"), "");
    await writeManifest(d);
    const listed = Object.keys(JSON.parse(readFileSync(path.join(d, MANIFEST_FILE), "utf8")).files);
    expect(listed).toEqual([...names.map((n) => `${n}.txt`), "sub.txt", ...names.map((n) => `sub/${n}.bin`)].sort());
    expect(listed.indexOf("sub.txt")).toBeLessThan(listed.indexOf("sub/a.bin"));
  });

  it("a file larger than one read chunk is counted and hashed whole", async () => {
    const d = tmp();
    writeFileSync(path.join(d, "big"), Buffer.alloc(200_000, 0x61)); // 200 000 × "a", several 64 KiB chunks
    await writeManifest(d);
    const m = JSON.parse(readFileSync(path.join(d, MANIFEST_FILE), "utf8"));
    expect(m.files.big.bytes).toBe(200_000);
    // python3 -c "import hashlib;print(hashlib.sha256(b'a'*200000).hexdigest())"
    expect(m.files.big.sha256).toBe("2287d207f24a941ff3b56c04c8a25ad56b63e3023207b3bb5b4ac0c9869d74be");
  });
});

describe("verifyManifest", () => {
  it("a missing manifest, and one that is not JSON, say the folder cannot be checked and what to do", async () => {
    const d = await folder();
    const file = path.join(d, "manifest.json");
    rmSync(file);
    expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
      `resume_from_checkpoint: ${file} is missing, so the checkpoint's files cannot be checked; it was not written completely by pbrl. Resume from an earlier round folder, or start the run again`,
    );
    writeFileSync(file, '{"format": "pbrl-checkpoint-manifest/1", "files": {');
    expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
      `resume_from_checkpoint: ${file} is damaged, so the checkpoint's files cannot be checked; it was not written completely by pbrl. Resume from an earlier round folder, or start the run again`,
    );
  });

  it("a manifest of another format, or without a files object, is not a pbrl checkpoint manifest", async () => {
    const d = await folder();
    const file = path.join(d, "manifest.json");
    const refused = (format: string) => `what: ${file} is not a pbrl checkpoint manifest (format ${format}, expected "pbrl-checkpoint-manifest/1")`;
    writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/2", files: {} }));
    expect(await message(verifyManifest(d, "what"))).toBe(refused('"pbrl-checkpoint-manifest/2"'));
    writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/1", files: null }));
    expect(await message(verifyManifest(d, "what"))).toBe(refused('"pbrl-checkpoint-manifest/1"'));
    writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/1", files: "z.txt" }));
    expect(await message(verifyManifest(d, "what"))).toBe(refused('"pbrl-checkpoint-manifest/1"'));
    writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/1" }));
    expect(await message(verifyManifest(d, "what"))).toBe(refused('"pbrl-checkpoint-manifest/1"'));
    writeFileSync(file, "null");
    expect(await message(verifyManifest(d, "what"))).toBe(refused("undefined"));
    // an empty files object is a manifest of an empty folder
    writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/1", files: {} }));
    await expect(verifyManifest(d, "what")).resolves.toBeUndefined();
  });

  it("a listed path outside the folder is refused, also a sibling whose name starts with the folder's", async () => {
    const parent = tmp();
    const d = path.join(parent, "ck");
    mkdirSync(d);
    mkdirSync(path.join(parent, "ck2"));
    writeFileSync(path.join(parent, "ck2", "f"), "abc"); // present and matching: only its place is wrong
    const file = path.join(d, "manifest.json");
    for (const rel of ["../ck2/f", "../ck/../ck2/f"]) {
      writeFileSync(file, JSON.stringify({ format: "pbrl-checkpoint-manifest/1", files: { [rel]: { bytes: 3, sha256: SHA_ABC } } }));
      expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
        `resume_from_checkpoint: ${file} lists ${JSON.stringify(rel)}, which is outside the checkpoint folder`,
      );
    }
  });

  it("a listed file that is gone is named, with what to do", async () => {
    const d = await folder();
    const target = path.join(d, "sub", "deeper", "b.bin");
    rmSync(target);
    expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
      `resume_from_checkpoint: ${target} is missing from the checkpoint (its manifest lists it); resume from an earlier round folder, or start the run again`,
    );
  });

  it("a file changed at the same size, or a manifest whose size alone differs, names both sizes and hash prefixes", async () => {
    const d = await folder();
    const target = path.join(d, "z.txt");
    writeFileSync(target, "abd");
    expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
      `resume_from_checkpoint: ${target} changed after the checkpoint was written (3 bytes, sha256 ${SHA_ABD.slice(0, 12)}…; the manifest has 3 bytes, ${SHA_ABC.slice(0, 12)}…). Restore the original file, or resume from an earlier round folder`,
    );
    writeFileSync(target, "abc");
    await expect(verifyManifest(d, "resume_from_checkpoint")).resolves.toBeUndefined();
    const file = path.join(d, "manifest.json");
    const m = JSON.parse(readFileSync(file, "utf8"));
    m.files["z.txt"].bytes = 4;
    writeFileSync(file, JSON.stringify(m));
    expect(await message(verifyManifest(d, "resume_from_checkpoint"))).toBe(
      `resume_from_checkpoint: ${target} changed after the checkpoint was written (3 bytes, sha256 ba7816bf8f01…; the manifest has 4 bytes, ba7816bf8f01…). Restore the original file, or resume from an earlier round folder`,
    );
  });
});
