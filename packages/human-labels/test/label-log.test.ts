import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { LabelFileError, LabelLog, labelFilePath, readLabels } from "../src/index.js";
import { record, tempDir } from "./helpers.js";

describe("label log", () => {
  it("names the file by the round, zero-padded to four digits", () => {
    expect(labelFilePath("/x", 3)).toBe(path.join("/x", "round_0003.jsonl"));
    expect(labelFilePath("/x", 12345)).toBe(path.join("/x", "round_12345.jsonl"));
    expect(() => labelFilePath("/x", -1)).toThrow(RangeError);
  });

  it("reads back what it appended, one JSON line a record, in a folder it makes", async () => {
    const dir = path.join(tempDir(), "labels");
    const log = new LabelLog(dir, 1);
    const written = [
      record(),
      record({ annotator: "bo", verdict: "tie", winner: null, rationale: "same\nthing" }),
      record({ comparison_id: "r1-c1", item_index: 1 }),
    ];
    for (const r of written) await log.append(r);
    expect(await readLabels(dir, 1)).toEqual(written);
    expect(await log.read()).toEqual(written);
    const lines = readFileSync(log.file, "utf8").split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe("");
    expect(JSON.parse(lines[1] as string)).toEqual(written[1]);
    expect(await readLabels(dir, 2)).toEqual([]); // no file, no records
  });

  it("keeps lines whole when appends overlap", async () => {
    const log = new LabelLog(tempDir(), 1);
    const many = Array.from({ length: 25 }, (_, i) => record({ annotator: `a${i}`, rationale: "x".repeat(i * 100) }));
    await Promise.all(many.map((r) => log.append(r)));
    expect((await log.read()).map((r) => r.annotator).sort()).toEqual(many.map((r) => r.annotator).sort());
  });

  it("ignores a torn last line and cuts it off before the next append, keeping every complete line", async () => {
    const dir = tempDir();
    const first = new LabelLog(dir, 1);
    await first.append(record());
    await first.append(record({ annotator: "bo" }));
    const complete = readFileSync(first.file);
    appendFileSync(first.file, '{"comparison_id":"r1-c2","rou'); // a kill mid-write
    expect((await readLabels(dir, 1)).map((r) => r.annotator)).toEqual(["ada", "bo"]);
    const resumed = new LabelLog(dir, 1);
    await resumed.append(record({ annotator: "cy" }));
    const after = readFileSync(first.file);
    expect(after.subarray(0, complete.length).equals(complete)).toBe(true);
    expect(after.toString("utf8")).not.toContain("rou\n");
    expect((await readLabels(dir, 1)).map((r) => r.annotator)).toEqual(["ada", "bo", "cy"]);
  });

  it("cuts a file that holds only a torn line back to empty, without deleting it", async () => {
    const dir = tempDir();
    const file = labelFilePath(dir, 2);
    writeFileSync(file, '{"comparison_id":');
    expect(await readLabels(dir, 2)).toEqual([]);
    await new LabelLog(dir, 2).append(record({ round: 2 }));
    expect(readFileSync(file, "utf8")).toBe(JSON.stringify(record({ round: 2 })) + "\n");
  });

  it("keeps a whole last record that only lacks its newline (an edit by hand), adding the newline", async () => {
    const dir = tempDir();
    const file = labelFilePath(dir, 1);
    writeFileSync(file, JSON.stringify(record()));
    expect(await readLabels(dir, 1)).toHaveLength(1);
    await new LabelLog(dir, 1).append(record({ annotator: "bo" }));
    expect((await readLabels(dir, 1)).map((r) => r.annotator)).toEqual(["ada", "bo"]);
  });

  it("refuses a file with an invalid complete line, naming the file and line, and leaves it as it was", async () => {
    const dir = tempDir();
    const file = labelFilePath(dir, 1);
    const text = [JSON.stringify(record()), "{not json", JSON.stringify(record({ annotator: "bo" })), ""].join("\n");
    writeFileSync(file, text);
    const err = await readLabels(dir, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LabelFileError);
    expect((err as LabelFileError).message).toContain(`${file}:2:`);
    expect((err as LabelFileError).line).toBe(2);
    await expect(new LabelLog(dir, 1).append(record({ annotator: "cy" }))).rejects.toThrow(`${file}:2:`);
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("refuses a JSON line that is not a label record, and a record of another round", async () => {
    const dir = tempDir();
    const file = labelFilePath(dir, 1);
    writeFileSync(file, JSON.stringify({ ...record(), winner: "comparator" }) + "\n");
    await expect(readLabels(dir, 1)).rejects.toThrow(/round_0001\.jsonl:1: not a label record: winner/);
    writeFileSync(file, JSON.stringify(record({ round: 2 })) + "\n" + JSON.stringify(record()) + "\n");
    await expect(readLabels(dir, 1)).rejects.toThrow(/:1: a record of round 2/);
  });

  it("validates a record before writing anything", async () => {
    const dir = tempDir();
    const log = new LabelLog(dir, 1);
    await expect(log.append({ ...record(), verdict: "tie" })).rejects.toThrow(/winner/);
    await expect(log.append(record({ round: 4 }))).rejects.toThrow(RangeError);
    expect(existsSync(log.file)).toBe(false);
    await log.append(record());
    expect(statSync(log.file).size).toBe(JSON.stringify(record()).length + 1);
  });
});
