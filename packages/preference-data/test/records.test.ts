import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { PairRecordSchema, readPairsFile, readRoundFile, roundFileName, writePairsFile, writeRoundFile, type PairRecord } from "../src/index.js";

const record: PairRecord = {
  prompts: ["p0", "p1 — café"],
  winner_completions: ["w0", "w1"],
  loser_completions: ["l0", "l1"],
  winner_reward: 0.92,
  loser_reward: 0.41,
  candidate_reward_mean: 0.63,
};
const iterative: PairRecord = { ...record, raw_rewards: [0.92, 0.41], target_raw_reward: 0.92, comparator_raw_reward: 0.41 };
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-pairs-"));

describe("pair record schema", () => {
  it("accepts the seed's record, with and without the iterative fields, and keeps extra fields", () => {
    expect(PairRecordSchema.parse(record)).toEqual(record);
    expect(PairRecordSchema.parse(iterative)).toEqual(iterative);
    expect(PairRecordSchema.parse({ ...record, comparator_raw_reward: null })).toEqual({ ...record, comparator_raw_reward: null });
    expect(PairRecordSchema.parse({ ...record, scorer: "reward_model" })).toMatchObject({ scorer: "reward_model" });
  });

  it("rejects records that break the format, naming the field", () => {
    const bad = (r: unknown) => PairRecordSchema.safeParse(r);
    expect(bad({ ...record, winner_completions: ["only one"] }).error?.issues[0]?.path).toEqual(["winner_completions"]);
    expect(bad({ ...record, winner_reward: "high" }).success).toBe(false);
    expect(bad({ ...record, raw_rewards: [1] }).success).toBe(false);
    const { prompts: _p, ...noPrompts } = record;
    expect(bad(noPrompts).error?.issues[0]?.path).toEqual(["prompts"]);
  });
});

describe("files", () => {
  it("round files: named iteration_NNNN.json, compact, round-trip, empty rounds too", async () => {
    const dir = tmp();
    expect(roundFileName(1)).toBe("iteration_0001.json");
    expect(roundFileName(12)).toBe("iteration_0012.json");
    const f = path.join(dir, roundFileName(3));
    await writeRoundFile(f, 3, [iterative, iterative]);
    expect(readFileSync(f, "utf8")).not.toContain("\n");
    expect(JSON.parse(readFileSync(f, "utf8"))).toEqual({ iteration: 3, num_pairs: 2, pairs: [iterative, iterative] });
    expect(await readRoundFile(f)).toEqual({ iteration: 3, num_pairs: 2, pairs: [iterative, iterative] });
    const empty = path.join(dir, roundFileName(4));
    await writeRoundFile(empty, 4, []);
    expect(await readRoundFile(empty)).toEqual({ iteration: 4, num_pairs: 0, pairs: [] });
  });

  it("pairs files round-trip", async () => {
    const f = path.join(tmp(), "preference_pairs.json");
    await writePairsFile(f, [record]);
    expect(await readPairsFile(f)).toEqual({ num_pairs: 1, pairs: [record] });
  });

  it("truncated, mismatched and missing files are clear errors; invalid records are never written", async () => {
    const dir = tmp();
    const f = path.join(dir, roundFileName(1));
    await writeRoundFile(f, 1, [record]);
    const text = readFileSync(f, "utf8");
    writeFileSync(f, text.slice(0, text.length - 10));
    await expect(readRoundFile(f)).rejects.toThrow(/iteration_0001\.json is not valid JSON \(truncated or corrupt\?\)/);
    writeFileSync(f, JSON.stringify({ iteration: 1, num_pairs: 2, pairs: [record] }));
    await expect(readRoundFile(f)).rejects.toThrow(/num_pairs: is 2 but the file holds 1 pairs/);
    await expect(readRoundFile(path.join(dir, "iteration_0009.json"))).rejects.toThrow(/cannot read round file .*iteration_0009\.json: file not found/);
    await expect(writeRoundFile(path.join(dir, "x.json"), 1, [{ ...record, loser_reward: NaN }])).rejects.toThrow(
      /refusing to write an invalid round file: pairs\.0\.loser_reward/,
    );
  });
});
