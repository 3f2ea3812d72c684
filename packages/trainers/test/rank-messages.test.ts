// Messages between ddp ranks travel as int32 words: a request with typed arrays and Maps comes
// back equal, the words are the bytes rounded up to whole words; agents map to ranks (a mod W, or
// replicas a, a + A, … with more ranks than agents), and a batch is shared out evenly.
import { describe, expect, it } from "vitest";
import { agentsOnRank, evenShares, packMessage, replicaRanks, unpackMessage } from "../src/parallel/rank-messages.js";

describe("rank messages", () => {
  it("round-trips what worker threads post: typed arrays, Maps, nested objects", () => {
    const msg = [
      {
        id: 7,
        agent: 1,
        req: { kind: "step", others: new Float32Array([0.5, -2]), weights: new Map([["w", { shape: [2], data: new Float32Array([1, 3]) }]]) },
      },
    ];
    const { words, bytes } = packMessage(msg);
    expect(words.length).toBe(Math.ceil(bytes / 4));
    // through a copy, as after a broadcast
    expect(unpackMessage(Int32Array.from(words), bytes)).toEqual(msg);
    expect(() => unpackMessage(words, words.length * 4 + 1)).toThrow(/do not fit/);
  });

  it("no more ranks than agents: rank r holds agents r, r + W, …", () => {
    expect([0, 1, 2, 3, 4].map((a) => replicaRanks(a, 5, 2))).toEqual([[0], [1], [0], [1], [0]]);
    expect([0, 1].map((a) => replicaRanks(a, 2, 2))).toEqual([[0], [1]]);
    expect(agentsOnRank(0, 5, 2)).toEqual([0, 2, 4]);
    expect(agentsOnRank(1, 5, 2)).toEqual([1, 3]);
  });

  it("more ranks than agents: agent a on ranks a, a + A, … (its replicas), every rank holding one agent", () => {
    expect([0, 1].map((a) => replicaRanks(a, 2, 4))).toEqual([
      [0, 2],
      [1, 3],
    ]);
    // an odd world: agent 0 has three replicas, agent 1 two
    expect([0, 1].map((a) => replicaRanks(a, 2, 5))).toEqual([
      [0, 2, 4],
      [1, 3],
    ]);
    expect([0, 1, 2, 3, 4].map((r) => agentsOnRank(r, 2, 5))).toEqual([[0], [1], [0], [1], [0]]);
    // one actor model (centralized): every rank a replica of it
    expect(replicaRanks(0, 1, 3)).toEqual([0, 1, 2]);
  });

  it("shares a batch out in contiguous, even ranges, in order", () => {
    expect(evenShares(7, 2)).toEqual([
      [0, 3],
      [3, 7],
    ]);
    expect(evenShares(6, 3)).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
    ]);
    // fewer things than replicas: some get none
    expect(evenShares(1, 3)).toEqual([
      [0, 0],
      [0, 0],
      [0, 1],
    ]);
  });
});
