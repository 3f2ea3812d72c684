import { describe, expect, it } from "vitest";
import { dropoutHash, RngStream, RngStreams } from "../src/index.js";

function draws(s: RngStream, n: number): number[] {
  return Array.from({ length: n }, () => s.nextUint32());
}

describe("RngStream", () => {
  it("is deterministic for a (seed, name) and differs across seeds and names", () => {
    expect(draws(RngStream.fromSeed(7, "a"), 5)).toEqual(draws(RngStream.fromSeed(7, "a"), 5));
    expect(draws(RngStream.fromSeed(7, "a"), 5)).not.toEqual(draws(RngStream.fromSeed(8, "a"), 5));
    expect(draws(RngStream.fromSeed(7, "a"), 5)).not.toEqual(draws(RngStream.fromSeed(7, "b"), 5));
    // seeds beyond 32 bits are distinguished too
    expect(draws(RngStream.fromSeed(2 ** 32, "a"), 5)).not.toEqual(draws(RngStream.fromSeed(0, "a"), 5));
  });

  it("matches the xoshiro128** reference sequence for a given state", () => {
    // Outputs of the authors' C implementation (prng.di.unimi.it/xoshiro128starstar.c) from state 1,2,3,4.
    const s = RngStream.fromState([1, 2, 3, 4]);
    expect(draws(s, 6)).toEqual([11520, 0, 5927040, 70819200, 2031721883, 1637235492]);
  });

  it("fillDropoutMask masks entry i by the hash of i under two keys drawn from the stream, which moves on by those two draws", () => {
    // lowbias32 of 0 and 1 (Wellons' published function), the building block of dropoutHash.
    expect(dropoutHash(0, 0, 0)).toBe(0);
    expect(dropoutHash(1, 0, 0)).not.toBe(dropoutHash(2, 0, 0));
    for (const [p, n] of [
      [0.05, 1000],
      [0.5, 777],
      [0.9, 3],
    ] as const) {
      const a = RngStream.fromSeed(7, `mask-${p}`);
      const b = RngStream.fromSeed(7, `mask-${p}`);
      const mask = new Float32Array(n);
      a.fillDropoutMask(mask, p, 1 / (1 - p));
      const keep = Math.fround(1 / (1 - p));
      const [k0, k1] = [b.nextUint32(), b.nextUint32()];
      const expected = Float32Array.from({ length: n }, (_, i) => (dropoutHash(i, k0, k1) < p * 2 ** 32 ? 0 : keep));
      expect(mask).toEqual(expected);
      expect(a.getState()).toEqual(b.getState());
      const dropped = mask.filter((x) => x === 0).length / n;
      if (n >= 777) expect(Math.abs(dropped - p)).toBeLessThan(0.05);
    }
    // Distinct keys give unrelated masks: two masks of one stream agree on about p² + (1 − p)² of their entries.
    const s = RngStream.fromSeed(8, "two-masks");
    const [m1, m2] = [new Float32Array(20000), new Float32Array(20000)];
    s.fillDropoutMask(m1, 0.5, 2);
    s.fillDropoutMask(m2, 0.5, 2);
    const agree = m1.filter((v, i) => v === m2[i]).length / m1.length;
    expect(Math.abs(agree - 0.5)).toBeLessThan(0.02);
  });

  it("restores a saved state exactly", () => {
    const s = RngStream.fromSeed(3, "x");
    draws(s, 10);
    const saved = s.getState();
    const next = draws(s, 10);
    s.setState(saved);
    expect(draws(s, 10)).toEqual(next);
    expect(draws(RngStream.fromState(saved), 10)).toEqual(next);
  });

  it("rejects bad seeds and states", () => {
    expect(() => RngStream.fromSeed(-1)).toThrow(/seed/);
    expect(() => RngStream.fromSeed(1.5)).toThrow(/seed/);
    expect(() => RngStream.fromState([0, 0, 0, 0])).toThrow(/zero/);
    expect(() => RngStream.fromState([1, 2, 3] as unknown as [number, number, number, number])).toThrow(/four/);
  });

  it("gives uniform floats in [0,1) and unbiased integers", () => {
    const s = RngStream.fromSeed(11, "u");
    const counts = new Array<number>(6).fill(0);
    const n = 60000;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const u = s.random();
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
      sum += u;
      counts[s.int(6)]! += 1;
    }
    expect(sum / n).toBeCloseTo(0.5, 2);
    // chi-square with 5 dof; 20.5 is the 0.999 quantile
    const chi = counts.reduce((acc, c) => acc + (c - n / 6) ** 2 / (n / 6), 0);
    expect(chi).toBeLessThan(20.5);
  });

  it("draws standard normals", () => {
    const s = RngStream.fromSeed(5, "n");
    const xs = Array.from({ length: 40000 }, () => s.normal());
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length;
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(variance - 1)).toBeLessThan(0.03);
  });

  it("shuffles into a permutation and draws weighted indices in proportion", () => {
    const s = RngStream.fromSeed(9, "p");
    const perm = s.permutation(50);
    expect([...perm].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(perm).not.toEqual(Array.from({ length: 50 }, (_, i) => i));
    const w = [1, 0, 3];
    const counts = [0, 0, 0];
    for (let i = 0; i < 40000; i++) counts[s.weightedIndex(w)]! += 1;
    expect(counts[1]).toBe(0);
    expect(counts[2]! / counts[0]!).toBeGreaterThan(2.8);
    expect(counts[2]! / counts[0]!).toBeLessThan(3.2);
    expect(() => s.weightedIndex([0, 0])).toThrow(/positive sum/);
    expect(() => s.weightedIndex([1, NaN])).toThrow(/finite/);
  });
});

describe("RngStream.split", () => {
  it("advances the parent by exactly two draws and gives children independent of its later draws", () => {
    const a = RngStream.fromSeed(5, "p");
    const b = RngStream.fromSeed(5, "p");
    const child = a.split();
    b.nextUint32();
    b.nextUint32();
    expect(a.getState()).toEqual(b.getState());
    // Deterministic: the same parent state gives the same child.
    const again = RngStream.fromSeed(5, "p").split();
    const xs = Array.from({ length: 8 }, () => child.nextUint32());
    expect(Array.from({ length: 8 }, () => again.nextUint32())).toEqual(xs);
    // Two successive children differ from each other and from the parent's own sequence.
    const second = a.split();
    const ys = Array.from({ length: 8 }, () => second.nextUint32());
    expect(ys).not.toEqual(xs);
    expect(Array.from({ length: 8 }, () => a.nextUint32())).not.toEqual(xs);
    // Children look uniform: the mean of many draws of many children is near 1/2.
    let sum = 0;
    const parent = RngStream.fromSeed(9);
    for (let c = 0; c < 200; c++) {
      const s = parent.split();
      for (let i = 0; i < 50; i++) sum += s.random();
    }
    expect(Math.abs(sum / 10_000 - 0.5)).toBeLessThan(0.02);
  });
});

describe("RngStreams", () => {
  it("keeps named streams independent: drawing from one never shifts another", () => {
    const a = new RngStreams(42);
    const b = new RngStreams(42);
    draws(a.get("comparator"), 100);
    expect(draws(a.get("policy"), 5)).toEqual(draws(b.get("policy"), 5));
  });

  it("saves and restores every stream", () => {
    const a = new RngStreams(1);
    draws(a.get("x"), 3);
    draws(a.get("y"), 4);
    const state = JSON.parse(JSON.stringify(a.getState())) as ReturnType<RngStreams["getState"]>;
    const expected = [draws(a.get("x"), 3), draws(a.get("y"), 3), draws(a.get("z"), 3)];
    const b = RngStreams.fromState(state);
    expect([draws(b.get("x"), 3), draws(b.get("y"), 3), draws(b.get("z"), 3)]).toEqual(expected);
    expect(state.seed).toBe(1);
    expect(Object.keys(state.streams)).toEqual(["x", "y"]);
  });

  it("restores in place, so holders of a stream continue from the saved state", () => {
    const a = new RngStreams(4);
    const held = a.get("replay");
    draws(held, 5);
    draws(a.get("fresh"), 2);
    const saved = a.getState();
    const expected = draws(held, 3);
    draws(a.get("later"), 4); // a stream created after the save restarts from its seed
    a.setState(saved);
    expect(draws(held, 3)).toEqual(expected);
    expect(draws(a.get("later"), 4)).toEqual(draws(new RngStreams(4).get("later"), 4));
    expect(() => new RngStreams(5).setState(saved)).toThrow(/saved with seed 4/);
  });
});
