import { RngStream } from "@pbrl/core-tensor";
import type { CollectedPair } from "@pbrl/preference-data";
import { describe, expect, it } from "vitest";
import { OnDiskReplayBuffer, type OnDiskReplayBufferOptions } from "../src/index.js";
import { charTokenize, labelOf, makeRound, tempDir } from "./helpers.js";

const OPTIONS: Omit<OnDiskReplayBufferOptions, "dir" | "rng">[] = [
  { mode: "nearest_k", k: 2, sampleSize: 17 },
  { mode: "all_history" },
  { mode: "lambda_decay", lambda: 0.7, sampleSize: 23 },
];
const SIZES = [4, 0, 6, 3, 0, 5, 2];

async function runRound(buffer: OnDiskReplayBuffer, r: number): Promise<string[]> {
  const current: CollectedPair[] = makeRound(r, SIZES[r - 1]!);
  await buffer.addRound(r, current);
  return (await buffer.select(r, current, charTokenize)).map(labelOf);
}

describe.each(OPTIONS)("determinism, %o", (o) => {
  it("two buffers with equal seeds and inputs select identical pairs", async () => {
    const a = new OnDiskReplayBuffer({ ...o, dir: await tempDir(), rng: RngStream.fromSeed(5, "replay") });
    const b = new OnDiskReplayBuffer({ ...o, dir: await tempDir(), rng: RngStream.fromSeed(5, "replay") });
    for (let r = 1; r <= SIZES.length; r++) expect(await runRound(a, r)).toEqual(await runRound(b, r));
  });

  it("a different seed selects differently", async () => {
    const a = new OnDiskReplayBuffer({ ...o, dir: await tempDir(), rng: RngStream.fromSeed(5, "replay") });
    const b = new OnDiskReplayBuffer({ ...o, dir: await tempDir(), rng: RngStream.fromSeed(6, "replay") });
    const seqA: string[][] = [];
    const seqB: string[][] = [];
    for (let r = 1; r <= SIZES.length; r++) {
      seqA.push(await runRound(a, r));
      seqB.push(await runRound(b, r));
    }
    expect(seqA).not.toEqual(seqB);
  });

  it("a buffer restored from getState with the saved stream state continues like the original", async () => {
    const dir = await tempDir();
    const rng = RngStream.fromSeed(5, "replay");
    const original = new OnDiskReplayBuffer({ ...o, dir, rng });
    for (let r = 1; r <= 4; r++) await runRound(original, r);
    // What a checkpoint after round 4 holds, serialised as it would be on disk.
    const saved = JSON.parse(JSON.stringify({ replay: original.getState(), rng: rng.getState() }));
    const after: string[][] = [];
    for (let r = 5; r <= SIZES.length; r++) after.push(await runRound(original, r));

    const resumed = new OnDiskReplayBuffer({ ...o, dir, rng: RngStream.fromState(saved.rng) });
    await resumed.restore(saved.replay);
    expect(resumed.getState()).toEqual(saved.replay);
    const resumedAfter: string[][] = [];
    for (let r = 5; r <= SIZES.length; r++) resumedAfter.push(await runRound(resumed, r));
    expect(resumedAfter).toEqual(after);
    expect(resumed.getState()).toEqual(original.getState());
  });
});
