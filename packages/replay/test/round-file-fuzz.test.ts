// Property-based tests of the round-file reader behind replay and resume: whatever a round file
// holds — random bytes, a valid file truncated or with bytes overwritten, fields of the wrong type
// or value — and whatever the index entry says, reading it gives the round the entry describes or
// a ReplayError naming the file. Never a TypeError or a round that disagrees with its entry.
import { promises as fs, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { RngStream } from "@pbrl/core-tensor";
import type { ReplayIndexEntry, RoundFile } from "@pbrl/preference-data";
import { beforeAll, describe, expect, it } from "vitest";
import { OnDiskReplayBuffer, readIndexedRound, ReplayError } from "../src/index.js";
import { makeRound, tempDir } from "./helpers.js";

const RUNS = { numRuns: 1000 };
let dir: string;
let file: string;
let entry: ReplayIndexEntry;
let valid: Buffer;
let body: Record<string, unknown>;

beforeAll(async () => {
  dir = await tempDir();
  const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(1) });
  await buffer.addRound(1, makeRound(1, 3));
  entry = buffer.getState().entries[0]!;
  file = path.join(dir, entry.file);
  valid = readFileSync(file);
  body = JSON.parse(valid.toString("utf8")) as Record<string, unknown>;
});

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** Reads `bytes` as the indexed round file; the outcome must be the entry's round or a clear ReplayError. */
async function readsOrFailsClearly(bytes: Uint8Array, e: ReplayIndexEntry): Promise<void> {
  writeFileSync(file, bytes);
  let round: RoundFile;
  try {
    round = await readIndexedRound(dir, e);
  } catch (err) {
    expect(err).toBeInstanceOf(ReplayError);
    const message = (err as Error).message;
    expect(message, message).toContain(file);
    expect(message).not.toMatch(/\[object Object\]|Cannot read prop|is not a function/);
    return;
  }
  expect(round.iteration).toBe(e.iteration);
  expect(round.num_pairs).toBe(e.num_pairs);
  expect(round.pairs).toHaveLength(e.num_pairs);
  if (e.sha256 !== undefined) expect(sha256(bytes)).toBe(e.sha256);
  for (const p of round.pairs) for (const k of ["prompts", "winner_completions", "loser_completions"] as const) expect(p[k]).toHaveLength(p.prompts.length);
}

const nasty = fc.oneof(
  fc.integer({ min: -3, max: 5 }),
  fc.constantFrom(0.5, 1e308, -1, 2 ** 53 + 2, "1", "", "task", "reward_model", null, true, [], {}, ["a"], [1], [[1]]),
  fc.string({ maxLength: 5 }),
);
/** One of: the real hash of the bytes (so the content checks are what is tested), none, or a wrong one. */
const hashChoice = fc.constantFrom("real", "none", "wrong");
const withHash = (bytes: Uint8Array, choice: string): ReplayIndexEntry => {
  const { sha256: _old, ...rest } = entry;
  if (choice === "none") return rest;
  return { ...rest, sha256: choice === "real" ? sha256(bytes) : "0".repeat(64) };
};

describe("readIndexedRound on generated round files", () => {
  it("random bytes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), hashChoice, async (bytes, h) => readsOrFailsClearly(bytes, withHash(bytes, h))),
      RUNS,
    );
  });

  it("the valid file truncated, or with bytes overwritten", async () => {
    const edit = fc.record({
      cut: fc.integer({ min: 0, max: 4096 }),
      at: fc.array(fc.tuple(fc.nat(4096), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(edit, hashChoice, async ({ cut, at }, h) => {
        const bytes = Uint8Array.from(valid.subarray(0, cut % (valid.byteLength + 1)));
        for (const [i, b] of at) if (bytes.byteLength > 0) bytes[i % bytes.byteLength] = b;
        await readsOrFailsClearly(bytes, withHash(bytes, h));
      }),
      RUNS,
    );
  });

  it("fields of the file and of its pairs changed, removed or added", async () => {
    const topField = fc.constantFrom("iteration", "num_pairs", "scorer", "pairs", "extra");
    const pairField = fc.constantFrom(
      "prompts",
      "winner_completions",
      "loser_completions",
      "winner_reward",
      "loser_reward",
      "candidate_reward_mean",
      "raw_rewards",
      "target_raw_reward",
      "comparator_raw_reward",
      "prompt_token_ids",
      "winner_token_ids",
      "extra",
    );
    const change = fc.oneof(
      fc.record({ kind: fc.constant("top" as const), field: topField, value: fc.option(nasty, { nil: undefined }) }),
      fc.record({ kind: fc.constant("pair" as const), index: fc.nat(3), field: pairField, value: fc.option(nasty, { nil: undefined }) }),
      fc.record({ kind: fc.constant("root" as const), value: fc.jsonValue({ maxDepth: 2 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 3 }), hashChoice, async (changes, h) => {
        let doc: unknown = structuredClone(body);
        for (const c of changes) {
          if (c.kind === "root") doc = c.value;
          else if (typeof doc === "object" && doc !== null) {
            const target = c.kind === "top" ? doc : ((doc as { pairs?: unknown[] }).pairs?.[c.index] ?? null);
            if (typeof target === "object" && target !== null) (target as Record<string, unknown>)[c.field] = c.value;
          }
        }
        const bytes = new TextEncoder().encode(JSON.stringify(doc) ?? "");
        await readsOrFailsClearly(bytes, withHash(bytes, h));
      }),
      RUNS,
    );
  });
});

describe("restore on generated replay states", () => {
  it("entries with other iterations, counts, hashes and file names", async () => {
    writeFileSync(file, valid);
    const fileName = fc.oneof(
      fc.constantFrom(
        "iteration_0002.json",
        "../iteration_0001.json",
        `../${path.basename(dir)}/iteration_0001.json`,
        `./iteration_0001.json`,
        file,
        "",
        ".",
        "sub/iteration_0001.json",
      ),
      nasty,
    );
    // The true entry with up to two fields replaced or removed, so most states are nearly right.
    const field = fc.oneof(
      fc.record({ key: fc.constant("iteration"), value: fc.option(fc.oneof(fc.constant(2), nasty), { nil: undefined }) }),
      fc.record({ key: fc.constant("file"), value: fc.option(fileName, { nil: undefined }) }),
      fc.record({ key: fc.constant("num_pairs"), value: fc.option(fc.oneof(fc.constantFrom(2, 4), nasty), { nil: undefined }) }),
      fc.record({ key: fc.constant("sha256"), value: fc.option(fc.oneof(fc.constant("f".repeat(64)), nasty), { nil: undefined }) }),
    );
    const e = fc.array(field, { maxLength: 2 }).map((changes) => {
      const out: Record<string, unknown> = { ...entry };
      for (const c of changes) out[c.key] = c.value;
      return out;
    });
    const state = fc.oneof({ weight: 8, arbitrary: fc.record({ entries: fc.array(e, { maxLength: 2 }) }) }, { weight: 1, arbitrary: nasty });
    await fc.assert(
      fc.asyncProperty(state, async (s) => {
        const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(1) });
        try {
          await buffer.restore(s as never);
        } catch (err) {
          expect(err).toBeInstanceOf(ReplayError);
          expect((err as Error).message).toMatch(/^(replay state|cannot restore the replay index from )/);
          expect(buffer.getState().entries).toEqual([]);
          return;
        }
        // Only the one true entry (or none) can be accepted.
        const entries = buffer.getState().entries;
        expect(entries.every((x) => x.file === "iteration_0001.json" && x.iteration === 1 && x.num_pairs === 3)).toBe(true);
      }),
      RUNS,
    );
    expect(await fs.readFile(file)).toEqual(valid);
  });
});
