// Messages between ddp ranks travel as int32 words: a request with typed arrays and Maps comes
// back equal, the words are the bytes rounded up to whole words, and agents map to ranks r mod W.
import { describe, expect, it } from "vitest";
import { ownerOf, packMessage, unpackMessage } from "../src/parallel/rank-messages.js";

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

  it("rank r owns agents r, r + W, …", () => {
    expect([0, 1, 2, 3, 4].map((a) => ownerOf(a, 2))).toEqual([0, 1, 0, 1, 0]);
    expect([0, 1].map((a) => ownerOf(a, 2))).toEqual([0, 1]);
  });
});
