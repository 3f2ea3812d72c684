import { promises as fs } from "node:fs";
import * as path from "node:path";
import { RngStream } from "@pbrl/core-tensor";
import { readRoundFile, type CollectedPair } from "@pbrl/preference-data";
import { describe, expect, it } from "vitest";
import { OnDiskReplayBuffer, type OnDiskReplayBufferOptions } from "../src/index.js";
import { charTokenize, labelOf, makeRound, roundOf, tempDir } from "./helpers.js";

type ModeOptions = Omit<OnDiskReplayBufferOptions, "dir" | "rng">;

async function newBuffer(o: ModeOptions, seed = 11): Promise<OnDiskReplayBuffer> {
  return new OnDiskReplayBuffer({ ...o, dir: await tempDir(), rng: RngStream.fromSeed(seed, "replay") });
}

/** Rounds 1 (3 pairs), 2 (4 pairs), 3 (empty), 4 (2 pairs): the index holds 1, 2 and 4. */
const SIZES = [3, 4, 0, 2];

async function addRounds(buffer: OnDiskReplayBuffer, sizes = SIZES): Promise<CollectedPair[][]> {
  const rounds: CollectedPair[][] = [];
  for (const [i, n] of sizes.entries()) {
    rounds.push(makeRound(i + 1, n));
    await buffer.addRound(i + 1, rounds[i]!);
  }
  return rounds;
}

const sources = (pairs: readonly CollectedPair[]): number[] => [...new Set(pairs.map(roundOf))].sort((a, b) => a - b);

describe("round files and index", () => {
  it("writes a file for every round, empty ones too, and indexes only non-empty rounds", async () => {
    const buffer = await newBuffer({ mode: "current" });
    const rounds = await addRounds(buffer);
    for (const [i, pairs] of rounds.entries()) {
      const file = await readRoundFile(path.join(buffer.dir, `iteration_000${i + 1}.json`));
      expect(file.iteration).toBe(i + 1);
      expect(file.num_pairs).toBe(pairs.length);
      expect(file.pairs).toEqual(pairs.map((p) => p.record));
    }
    expect(buffer.getState()).toEqual({
      entries: [
        { iteration: 1, file: "iteration_0001.json", num_pairs: 3, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
        { iteration: 2, file: "iteration_0002.json", num_pairs: 4, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
        { iteration: 4, file: "iteration_0004.json", num_pairs: 2, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      ],
    });
  });

  it("getState returns copies", async () => {
    const buffer = await newBuffer({ mode: "all_history" });
    await addRounds(buffer, [2]);
    buffer.getState().entries[0]!.num_pairs = 99;
    buffer.getState().entries.pop();
    expect(buffer.getState().entries).toEqual([{ iteration: 1, file: "iteration_0001.json", num_pairs: 2, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
  });

  it("does not import an earlier run's files from the same directory", async () => {
    const dir = await tempDir();
    const earlier = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(1) });
    for (let r = 1; r <= 3; r++) await earlier.addRound(r, makeRound(r, 5, "old"));
    const fresh = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(1), sampleSize: 50 });
    expect(fresh.getState().entries).toEqual([]);
    const current = makeRound(1, 2, "new");
    await fresh.addRound(1, current);
    const selected = await fresh.select(1, current, charTokenize);
    expect(selected).toHaveLength(50);
    expect(selected.every((p) => p.record.prompts[0]!.startsWith("new1 "))).toBe(true);
  });

  it("rejects rounds out of order and select before addRound", async () => {
    const buffer = await newBuffer({ mode: "all_history" });
    await buffer.addRound(2, makeRound(2, 1));
    await expect(buffer.addRound(2, makeRound(2, 1))).rejects.toThrow(/round 2 comes after round 2 was already stored/);
    await expect(buffer.addRound(0, [])).rejects.toThrow(/iteration must be an integer ≥ 1/);
    await expect(buffer.select(3, makeRound(3, 1), charTokenize)).rejects.toThrow(/round 3 was not stored.*call addRound\(3, pairs\) first/);
    await expect(buffer.select(2, makeRound(2, 4), charTokenize)).rejects.toThrow(/round 2 was stored with 1 pairs but 4 current pairs were passed/);
  });
});

describe("mode current", () => {
  it("returns this round's in-memory pairs, same objects and order, without reading files or drawing", async () => {
    const buffer = await newBuffer({ mode: "current" });
    const rounds = await addRounds(buffer, [3, 4]);
    await fs.rm(path.join(buffer.dir, "iteration_0002.json"));
    const rng = (buffer as unknown as { rng: RngStream }).rng;
    const before = rng.getState();
    const selected = await buffer.select(2, rounds[1]!, charTokenize);
    expect(selected).toHaveLength(4);
    selected.forEach((p, i) => expect(p).toBe(rounds[1]![i]));
    expect(rng.getState()).toEqual(before);
  });

  it("trains nothing on an empty round, even with earlier rounds stored", async () => {
    const buffer = await newBuffer({ mode: "current" });
    await addRounds(buffer, [3, 0]);
    expect(await buffer.select(2, [], charTokenize)).toEqual([]);
  });
});

describe("mode nearest_k", () => {
  it("k = 2 draws only from the 2 newest non-empty rounds; an empty round does not use up the window", async () => {
    const buffer = await newBuffer({ mode: "nearest_k", k: 2, sampleSize: 200 });
    const rounds = await addRounds(buffer);
    const selected = await buffer.select(4, rounds[3]!, charTokenize);
    expect(selected).toHaveLength(200);
    expect(sources(selected)).toEqual([2, 4]);
  });

  it("without a sample size, an empty round replays as many pairs as the newest non-empty dataset holds", async () => {
    const buffer = await newBuffer({ mode: "nearest_k", k: 2 });
    await addRounds(buffer, [...SIZES, 0]);
    const selected = await buffer.select(5, [], charTokenize);
    expect(selected).toHaveLength(2);
    for (const r of sources(selected)) expect([2, 4]).toContain(r);
  });

  it("k = 1 without a sample size trains on a permutation of this round's pairs", async () => {
    const buffer = await newBuffer({ mode: "nearest_k", k: 1 });
    const rounds = await addRounds(buffer, [3, 5]);
    const selected = await buffer.select(2, rounds[1]!, charTokenize);
    expect(selected.map(labelOf).sort()).toEqual(rounds[1]!.map(labelOf).sort());
  });
});

describe("mode all_history", () => {
  it("draws from every non-empty round, weighing datasets equally", async () => {
    const buffer = await newBuffer({ mode: "all_history", sampleSize: 600 });
    const rounds = await addRounds(buffer);
    const selected = await buffer.select(4, rounds[3]!, charTokenize);
    expect(selected).toHaveLength(600);
    expect(sources(selected)).toEqual([1, 2, 4]);
    // Equal dataset weights: about 200 draws each whatever the dataset size (binomial sd ≈ 11.5).
    for (const r of [1, 2, 4]) {
      const n = selected.filter((p) => roundOf(p) === r).length;
      expect(n).toBeGreaterThan(150);
      expect(n).toBeLessThan(250);
    }
  });

  it("the default sample size is this round's pair count", async () => {
    const buffer = await newBuffer({ mode: "all_history" });
    const rounds = await addRounds(buffer);
    expect(await buffer.select(4, rounds[3]!, charTokenize)).toHaveLength(2);
  });

  it("with nothing stored anywhere selects nothing", async () => {
    const buffer = await newBuffer({ mode: "all_history" });
    await buffer.addRound(1, []);
    expect(await buffer.select(1, [], charTokenize)).toEqual([]);
  });
});

describe("mode lambda_decay", () => {
  it("λ = 0 draws only from the newest non-empty round", async () => {
    const buffer = await newBuffer({ mode: "lambda_decay", lambda: 0, sampleSize: 100 });
    await addRounds(buffer, [...SIZES, 0]);
    const selected = await buffer.select(5, [], charTokenize);
    expect(selected).toHaveLength(100);
    expect(sources(selected)).toEqual([4]);
  });

  it("λ = 0.5 favours newer rounds (expected shares 1/7, 2/7, 4/7)", async () => {
    const buffer = await newBuffer({ mode: "lambda_decay", lambda: 0.5, sampleSize: 700 });
    const rounds = await addRounds(buffer);
    const selected = await buffer.select(4, rounds[3]!, charTokenize);
    const counts = [1, 2, 4].map((r) => selected.filter((p) => roundOf(p) === r).length);
    // Means 100, 200, 400; each band is over 4 standard deviations wide on either side.
    expect(counts[0]).toBeGreaterThan(60);
    expect(counts[0]).toBeLessThan(140);
    expect(counts[1]).toBeGreaterThan(150);
    expect(counts[1]).toBeLessThan(250);
    expect(counts[2]).toBeGreaterThan(340);
    expect(counts[2]).toBeLessThan(460);
  });
});

describe("replayed pairs", () => {
  it("get their tokens from the tokenize callback and an unknown item index", async () => {
    const buffer = await newBuffer({ mode: "all_history", sampleSize: 30 });
    const rounds = await addRounds(buffer);
    const selected = await buffer.select(4, rounds[3]!, charTokenize);
    for (const p of selected) {
      expect(p.tokens).toEqual(charTokenize(p.record));
      expect(p.itemIndex).toBe(-1);
    }
  });

  it("within one dataset, a pair repeats only once every pair was drawn", async () => {
    const buffer = await newBuffer({ mode: "lambda_decay", lambda: 0, sampleSize: 2 * 2 + 1 });
    const rounds = await addRounds(buffer);
    const selected = await buffer.select(4, rounds[3]!, charTokenize);
    const counts = [...new Set(selected.map(labelOf))].map((l) => selected.filter((p) => labelOf(p) === l).length).sort();
    expect(counts).toEqual([2, 3]);
    // Repeats carry equal tokens in arrays of their own.
    const first = selected.filter((p) => labelOf(p) === labelOf(selected[0]!));
    expect(first[1]!.tokens).toEqual(first[0]!.tokens);
    expect(first[1]!.tokens[0]!.promptIds).not.toBe(first[0]!.tokens[0]!.promptIds);
  });

  it("a tokenizer failure names the pair and the file", async () => {
    const buffer = await newBuffer({ mode: "all_history", sampleSize: 5 });
    const rounds = await addRounds(buffer, [2]);
    const failing = (): never => {
      throw new Error("vocabulary mismatch");
    };
    await expect(buffer.select(1, rounds[0]!, failing)).rejects.toThrow(
      /cannot tokenize pair \d of replay round file .*iteration_0001\.json: vocabulary mismatch/,
    );
  });

  it("a round file deleted before selection is an error naming it", async () => {
    const buffer = await newBuffer({ mode: "lambda_decay", lambda: 0, sampleSize: 5 });
    const rounds = await addRounds(buffer, [2, 3]);
    await fs.rm(path.join(buffer.dir, "iteration_0002.json"));
    await expect(buffer.select(2, rounds[1]!, charTokenize)).rejects.toThrow(/iteration_0002\.json: file not found/);
  });
});
