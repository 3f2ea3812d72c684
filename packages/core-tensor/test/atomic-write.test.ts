import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { replaceDirAtomic, writeFileAtomic } from "../src/index.js";

describe("atomic writes", () => {
  it("replaces a file without leaving temporaries", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-aw-"));
    const f = path.join(dir, "sub", "a.json");
    await writeFileAtomic(f, "one");
    await writeFileAtomic(f, "two");
    expect(readFileSync(f, "utf8")).toBe("two");
    expect(readdirSync(path.dirname(f))).toEqual(["a.json"]);
  });

  it("swaps a directory in, and keeps the old one when filling fails", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-aw-"));
    const target = path.join(dir, "ckpt");
    mkdirSync(target);
    writeFileSync(path.join(target, "old.txt"), "old");
    await expect(
      replaceDirAtomic(target, async (tmp) => {
        writeFileSync(path.join(tmp, "half.txt"), "x");
        throw new Error("disk full");
      }),
    ).rejects.toThrow("disk full");
    expect(readdirSync(target)).toEqual(["old.txt"]);
    await replaceDirAtomic(target, async (tmp) => writeFileSync(path.join(tmp, "new.txt"), "new"));
    expect(readdirSync(target)).toEqual(["new.txt"]);
    expect(readdirSync(dir)).toEqual(["ckpt"]);
    expect(existsSync(path.join(target, "old.txt"))).toBe(false);
  });
});
