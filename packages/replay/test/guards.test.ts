// The replay buffer's guards on what comes from outside the type system — a checkpoint's replay
// state, an index entry's file name, a buffer built in code — and the edges of its draws, each
// with the message a user reads (written against StrykerJS's survivors; README "Mutation testing").
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { roundFileName } from "@pbrl/preference-data";
import {
  checkBufferOptions,
  defaultSampleSize,
  entryPath,
  OnDiskReplayBuffer,
  parseReplayState,
  readIndexedRound,
  ReplayError,
  sampleIndices,
  uniformWeights,
  lambdaWeights,
} from "../src/index.js";
import { charTokenize, makeRound, roundOf, tempDir } from "./helpers.js";

const HEX = "ab".repeat(32);
const entry = (over: Record<string, unknown> = {}) => ({ iteration: 1, file: roundFileName(1), num_pairs: 2, ...over });

describe("an index entry's file stays inside the replay directory", () => {
  it("refuses the directory itself, its parent, a path through it and an absolute path", () => {
    const dir = path.resolve("/data/run/replay");
    for (const file of ["", ".", "..", "../x.json", "a/../../x.json", "/etc/passwd"])
      expect(() => entryPath(dir, { iteration: 3, file, num_pairs: 1 }), file).toThrow(
        `replay round 3: file ${JSON.stringify(file)} is not inside the replay directory ${dir}`,
      );
    expect(entryPath(dir, { iteration: 3, file: "..x.json", num_pairs: 1 })).toBe(path.join(dir, "..x.json"));
    expect(entryPath(dir, { iteration: 3, file: roundFileName(3), num_pairs: 1 })).toBe(path.join(dir, roundFileName(3)));
  });
});

describe("a checkpoint's replay state", () => {
  const bad = (entries: unknown[], message: string) => expect(() => parseReplayState({ entries }), message).toThrow(message);

  it("refuses every malformed entry, naming it and what is wrong", () => {
    bad([null], "replay state entry 0 is not an object");
    bad([7], "replay state entry 0 is not an object");
    for (const iteration of ["1", 1.5, 0])
      bad([entry({ iteration })], `replay state entry 0: iteration must be an integer ≥ 1, got ${JSON.stringify(iteration)}`);
    bad([entry({ file: "" })], 'replay state entry 0: file must be a non-empty path, got ""');
    bad([entry({ file: 3 })], "replay state entry 0: file must be a non-empty path, got 3");
    bad([entry(), entry()], `replay state entry 1 (${roundFileName(1)}): iterations must increase, got 1 after 1`);
    for (const sha256 of [123, [HEX], HEX.toUpperCase(), `x${HEX}`, `${HEX}x`, HEX.slice(1)])
      bad([entry({ sha256 })], `replay state entry 0 (${roundFileName(1)}): sha256 must be 64 hex digits, got ${JSON.stringify(sha256)}`);
  });

  it("copies a sound entry, with its SHA-256 only when it has one", () => {
    const [withHash, without] = parseReplayState({ entries: [entry({ sha256: HEX }), entry({ iteration: 2, file: roundFileName(2) })] });
    expect(withHash).toEqual({ iteration: 1, file: roundFileName(1), num_pairs: 2, sha256: HEX });
    expect(Object.keys(without!)).toEqual(["iteration", "file", "num_pairs"]);
  });

  it("raises ReplayErrors, so callers can tell them from their own", () => {
    expect(() => parseReplayState({})).toThrow(ReplayError);
    try {
      parseReplayState(null);
    } catch (err) {
      expect((err as Error).name).toBe("ReplayError");
    }
    expect.assertions(2);
  });
});

describe("reading an indexed round", () => {
  it("reads an entry without a SHA-256 unchecked, and names the cause of an unreadable file", async () => {
    const dir = await tempDir();
    const buffer = new OnDiskReplayBuffer({ mode: "current", dir, rng: RngStream.fromSeed(1) });
    await buffer.addRound(1, makeRound(1, 2), "task");
    const [indexed] = parseReplayState(buffer.getState());
    await fs.appendFile(path.join(dir, indexed!.file), "\n");
    const { sha256: _, ...unhashed } = indexed!;
    expect((await readIndexedRound(dir, unhashed)).num_pairs).toBe(2);
    await expect(readIndexedRound(dir, indexed!)).rejects.toThrow("was rewritten after the replay index recorded it");
    const missing = readIndexedRound(dir, { iteration: 2, file: roundFileName(2), num_pairs: 1 });
    await expect(missing).rejects.toThrow(/^replay round 2: /);
    const err = await missing.catch((e: Error) => e);
    expect((err as Error).cause).toBeInstanceOf(Error);
    expect(((err as Error).cause as Error).message).toMatch(/cannot read round file/);
  });
});

describe("draw sizes and weights", () => {
  it("refuses a dataset size or sample count that is not a non-negative integer, naming it", () => {
    const rng = RngStream.fromSeed(3);
    for (const size of [-1, 1.5, NaN]) expect(() => sampleIndices(size, 1, rng)).toThrow(`dataset size must be a non-negative integer, got ${size}`);
    for (const count of [-1, 2.5, NaN]) expect(() => sampleIndices(3, count, rng)).toThrow(`sample count must be a non-negative integer, got ${count}`);
    for (const count of [-1, 0.5]) {
      expect(() => uniformWeights(count)).toThrow(`dataset count must be a non-negative integer, got ${count}`);
      expect(() => lambdaWeights(count, 0.5)).toThrow(`dataset count must be a non-negative integer, got ${count}`);
    }
  });

  it("draws no permutation beyond the ones it uses (the stream stays where a resumed run expects it)", () => {
    for (const count of [3, 6]) {
      const used = RngStream.fromSeed(4);
      sampleIndices(3, count, used);
      const expected = RngStream.fromSeed(4);
      for (let k = 0; k < count / 3; k++) expected.permutation(3);
      expect(used.random(), `count ${count}`).toBe(expected.random());
    }
  });

  it("without a configured size, samples as many pairs as the round has, else the newest non-empty dataset's", () => {
    const entries = [entry({ num_pairs: 5 }), entry({ iteration: 2, file: roundFileName(2), num_pairs: 7 })];
    expect(defaultSampleSize(3, entries)).toBe(3);
    expect(defaultSampleSize(0, entries)).toBe(7);
    expect(defaultSampleSize(0, [])).toBe(0);
  });
});

describe("a buffer built in code", () => {
  const rng = RngStream.fromSeed(5);
  it("names its mode and the field that is wrong", () => {
    for (const dir of ["", 5, undefined])
      expect(() => checkBufferOptions({ mode: "current", dir: dir as string, rng })).toThrow('replay buffer (mode "current"): dir must be a non-empty path');
    const method = () => 0;
    for (const partial of [
      { permutation: method, shuffle: method },
      { weightedIndex: method, shuffle: method },
      { weightedIndex: method, permutation: method },
    ])
      expect(() => checkBufferOptions({ mode: "current", dir: "d", rng: partial as unknown as RngStream })).toThrow(
        'replay buffer (mode "current"): rng must be an RngStream',
      );
    expect(() => checkBufferOptions({ mode: "lambda_decay", dir: "d", rng, lambda: "0.5" as unknown as number })).toThrow(
      'replay buffer (mode "lambda_decay"): lambda must be a number in [0, 1], got 0.5',
    );
  });
});

describe("selection", () => {
  it("draws nothing, and leaves the stream alone, when there is nothing to replay", async () => {
    const rng = RngStream.fromSeed(6);
    const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir: await tempDir(), rng, sampleSize: 4 });
    await buffer.addRound(1, [], "task");
    expect(await buffer.select(1, [], charTokenize)).toEqual([]);
    expect(rng.random()).toBe(RngStream.fromSeed(6).random());
  });

  it("does not read a round it draws nothing from", async () => {
    const dir = await tempDir();
    // λ = 0: every draw comes from the newest round; the older file may be anything.
    const buffer = new OnDiskReplayBuffer({ mode: "lambda_decay", dir, rng: RngStream.fromSeed(7), lambda: 0, sampleSize: 3 });
    await buffer.addRound(1, makeRound(1, 2), "task");
    await fs.writeFile(path.join(dir, roundFileName(1)), "not json");
    await buffer.addRound(2, makeRound(2, 2), "task");
    expect((await buffer.select(2, makeRound(2, 2), charTokenize)).map(roundOf)).toEqual([2, 2, 2]);
  });

  it("tokenizes a pair drawn twice once, and gives each copy its own arrays", async () => {
    const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir: await tempDir(), rng: RngStream.fromSeed(8), sampleSize: 6 });
    await buffer.addRound(1, makeRound(1, 2), "task");
    let calls = 0;
    const picked = await buffer.select(1, makeRound(1, 2), (r) => (calls++, charTokenize(r)));
    expect(picked).toHaveLength(6);
    expect(calls).toBe(2);
    const same = picked.filter((p) => p.record.prompts[0] === picked[0]!.record.prompts[0]);
    expect(same.length).toBeGreaterThan(1);
    expect(same[1]!.tokens).toEqual(same[0]!.tokens);
    expect(same[1]!.tokens[0]!.promptIds).not.toBe(same[0]!.tokens[0]!.promptIds);
  });

  it("names the pair and the cause when the tokenizer fails or answers for the wrong number of agents", async () => {
    const dir = await tempDir();
    const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(9), sampleSize: 1 });
    await buffer.addRound(1, makeRound(1, 1), "task");
    const cause = new Error("no chat template");
    const failing = buffer.select(1, makeRound(1, 1), () => {
      throw cause;
    });
    await expect(failing).rejects.toThrow(`cannot tokenize pair 0 of replay round file ${path.join(dir, roundFileName(1))}: no chat template`);
    await expect(failing.catch((err: Error) => Promise.reject(err.cause))).rejects.toBe(cause);
    await expect(buffer.select(1, makeRound(1, 1), (r) => charTokenize(r).slice(0, 1))).rejects.toThrow(
      `tokenizing pair 0 of replay round file ${path.join(dir, roundFileName(1))} gave 1 agent entries but the pair has 2`,
    );
  });

  it("a restore that cannot find its files says where it looked and how to fix it", async () => {
    const dir = await tempDir();
    const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(10) });
    const entries = [1, 2].map((i) => ({ iteration: i, file: roundFileName(i), num_pairs: 2 }));
    const message = await buffer.restore({ entries }).then(
      () => "",
      (e: Error) => e.message,
    );
    expect(message.startsWith(`cannot restore the replay index from ${dir}: replay round 1: `)).toBe(true);
    expect(message).toMatch(/; replay round 2: .*\. Resuming needs the round files .*set preference_replay_dir/);
  });
});
