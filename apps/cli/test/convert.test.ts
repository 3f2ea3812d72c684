// `pbrl convert --out DIR` never deletes what it did not write: not the source checkpoint, not a
// file, not a folder with other files. It writes beside DIR and renames into place, leaving no
// temporary folder, and may replace only an earlier convert output.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;

/** A copy of the tiny checkpoint in a fresh folder, and a snapshot of its bytes. */
function workspace(): { root: string; src: string; snapshot: () => Record<string, string> } {
  const root = mkdtempSync(path.join(tmpdir(), "pbrl-convert-"));
  const src = path.join(root, "src");
  cpSync(TINY, src, { recursive: true });
  const snapshot = () => Object.fromEntries(readdirSync(src).map((f) => [f, readFileSync(path.join(src, f)).toString("base64")]));
  return { root, src, snapshot };
}

const convert = (src: string, out: string, ...extra: string[]) => runCli(["convert", "--model", src, "--out", out, ...extra]);
const hidden = (dir: string) => readdirSync(dir).filter((f) => f.startsWith("."));

describe("pbrl convert --out", () => {
  it("refuses the source folder itself (an in-place bf16 convert kept the float32 original intact)", async () => {
    const { root, src, snapshot } = workspace();
    const before = snapshot();
    const r = await convert(src, src, "--dtype", "bfloat16");
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /--out .*src is the source checkpoint folder; writing there would replace the original weights\. Choose a new or empty folder for --out/,
    );
    expect(snapshot()).toEqual(before);
    expect(hidden(root)).toEqual([]);
  });

  it("refuses a folder inside the source, and one that contains it", async () => {
    const { root, src, snapshot } = workspace();
    const before = snapshot();
    const inside = await convert(src, path.join(src, "bf16"));
    expect(inside.code).toBe(2);
    expect(inside.err).toMatch(/is inside the source checkpoint folder/);
    const around = await convert(src, root);
    expect(around.code).toBe(2);
    expect(around.err).toMatch(/contains the source checkpoint folder/);
    expect(snapshot()).toEqual(before);
    expect(existsSync(path.join(src, "bf16"))).toBe(false);
  });

  it("refuses an existing file, and a folder holding files it did not write; both stay as they were", async () => {
    const { root, src } = workspace();
    const file = path.join(root, "notes.txt");
    writeFileSync(file, "keep me");
    const a = await convert(src, file);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/notes\.txt is an existing file, not a folder; pbrl convert never overwrites a file/);
    expect(readFileSync(file, "utf8")).toBe("keep me");
    const dir = path.join(root, "mine");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "results.csv"), "1,2");
    const b = await convert(src, dir);
    expect(b.code).toBe(2);
    expect(b.err).toMatch(
      /mine already holds files that pbrl convert did not write \(results\.csv\); it never deletes them\. Choose a new or empty folder for --out, or empty this one yourself/,
    );
    expect(readdirSync(dir)).toEqual(["results.csv"]);
    expect(hidden(root)).toEqual([]);
  });

  it("writes a new folder (parents too) and replaces only its own earlier output", async () => {
    const { root, src } = workspace();
    const out = path.join(root, "converted", "bf16");
    const first = await convert(src, out, "--dtype", "bfloat16");
    expect(first.code, first.err).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      ".pbrl-convert.json",
      "config.json",
      "generation_config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(JSON.parse(readFileSync(path.join(out, "config.json"), "utf8"))).toMatchObject({ dtype: "bfloat16" });
    const again = await convert(src, out);
    expect(again.code, again.err).toBe(0);
    expect(again.err).toMatch(/replacing an earlier pbrl convert output/);
    expect(JSON.parse(readFileSync(path.join(out, "config.json"), "utf8"))).toMatchObject({ dtype: "float32" });
    // No temporary folder is left beside the output.
    expect(hidden(path.join(root, "converted"))).toEqual([]);
    // A file added by the user makes the folder theirs again.
    writeFileSync(path.join(out, "README.md"), "my notes");
    const third = await convert(src, out);
    expect(third.code).toBe(2);
    expect(readFileSync(path.join(out, "README.md"), "utf8")).toBe("my notes");
  });

  it("writes into an empty folder; a failed load leaves nothing behind", async () => {
    const { root, src } = workspace();
    const empty = path.join(root, "empty");
    mkdirSync(empty);
    const r = await convert(src, empty);
    expect(r.code, r.err).toBe(0);
    expect(existsSync(path.join(empty, "model.safetensors"))).toBe(true);
    const broken = path.join(root, "broken");
    mkdirSync(broken);
    writeFileSync(path.join(broken, "config.json"), "{ not json");
    const bad = await convert(broken, path.join(root, "never"));
    expect(bad.code).not.toBe(0);
    expect(existsSync(path.join(root, "never"))).toBe(false);
    expect(hidden(root)).toEqual([]);
  });
});
