/**
 * Seeded random number streams.
 *
 * Every source of randomness in a run (policy sampling, comparator sampling, replay draws, epoch
 * shuffles, weight init) draws from its own named stream, derived from one run seed and the
 * stream's name. Streams are independent of each other, so adding draws to one never shifts
 * another, and their states serialise to plain JSON so a resumed run continues exactly.
 *
 * Generator: xoshiro128** (32-bit arithmetic, fast in JS, period 2^128 − 1).
 */

/** Serialisable state of one stream: the four 32-bit words of xoshiro128**. */
export type RngState = [number, number, number, number];

export interface RngStreamsState {
  seed: number;
  streams: Record<string, RngState>;
}

/** A 32-bit bijection with low bias (Wellons' lowbias32: xor-shifts and two odd multipliers). */
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Entry i's 32-bit draw of a dropout mask keyed by k0, k1 (RngStream.fillDropoutMask; the addons compute the same). */
export function dropoutHash(i: number, k0: number, k1: number): number {
  return mix32((mix32((i ^ k0) >>> 0) ^ k1) >>> 0);
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** MurmurHash3's 32-bit finaliser: spreads every input bit over the output. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function hashString(s: string, h: number): number {
  for (let i = 0; i < s.length; i++) h = fmix32((h ^ s.charCodeAt(i)) + 0x9e3779b9);
  return h;
}

function checkSeed(seed: number): void {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`seed must be a non-negative safe integer, got ${seed}`);
  }
}

export class RngStream {
  private s: Uint32Array;

  private constructor(state: RngState) {
    this.s = Uint32Array.from(state);
  }

  /** A stream determined by a seed and a name; equal (seed, name) always give equal streams. */
  static fromSeed(seed: number, name = ""): RngStream {
    checkSeed(seed);
    // Fold the 53-bit seed and the name into a 32-bit key, then expand with SplitMix32 so that
    // nearby seeds and names give unrelated states.
    let key = fmix32((seed >>> 0) ^ 0x6a09e667);
    key = fmix32(key ^ Math.floor(seed / 2 ** 32));
    key = hashString(name, key);
    const words: number[] = [];
    for (let i = 0; i < 4; i++) {
      key = (key + 0x9e3779b9) >>> 0;
      words.push(fmix32(key));
    }
    if (words.reduce((a, w) => a | w, 0) === 0) words[0] = 1;
    return new RngStream(words as RngState);
  }

  static fromState(state: RngState): RngStream {
    if (!Array.isArray(state) || state.length !== 4 || state.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffffffff)) {
      throw new TypeError(`invalid RNG state ${JSON.stringify(state)}: expected four unsigned 32-bit integers`);
    }
    if (state.every((w) => w === 0)) throw new TypeError("invalid RNG state: all words are zero");
    return new RngStream(state);
  }

  getState(): RngState {
    return [this.s[0]!, this.s[1]!, this.s[2]!, this.s[3]!];
  }

  setState(state: RngState): void {
    this.s = RngStream.fromState(state).s;
  }

  nextUint32(): number {
    const st = this.s;
    let s0 = st[0]!,
      s1 = st[1]!,
      s2 = st[2]!,
      s3 = st[3]!;
    const result = Math.imul(rotl(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (s1 << 9) >>> 0;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    st[0] = s0;
    st[1] = s1;
    st[2] = s2;
    st[3] = s3;
    return result;
  }

  /**
   * Inverted-dropout multipliers: `out[i]` is 0 where {@link dropoutHash}(i) under two keys drawn
   * from this stream falls below p·2³², else `keep`. Counter-based rather than one draw per entry,
   * so that a kernel can draw any entry on its own, on many lanes and threads at once (a LoRA step of
   * SmolLM2-135M at 4 × 128 tokens masks 77M entries: 0.12 s a step drawn one after another in C++);
   * the stream advances by two draws whatever the size. At most 2³² entries.
   */
  fillDropoutMask(out: Float32Array, p: number, keep: number): void {
    if (out.length > 2 ** 32) throw new RangeError(`fillDropoutMask: ${out.length} entries (at most 2^32)`);
    const k0 = this.nextUint32();
    const k1 = this.nextUint32();
    const threshold = p * 4294967296;
    for (let i = 0; i < out.length; i++) out[i] = dropoutHash(i, k0, k1) < threshold ? 0 : keep;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  random(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n), without modulo bias. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 2 ** 32) throw new RangeError(`int(n) needs an integer 1 ≤ n ≤ 2^32, got ${n}`);
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const x = this.nextUint32();
      if (x < limit) return x % n;
    }
  }

  /** Standard normal draw (Box–Muller; consumes two uniforms). */
  normal(): number {
    const u1 = 1 - this.random(); // (0, 1]: keeps log finite
    const u2 = this.random();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /**
   * A new, independent stream seeded from two draws of this one (53 bits, mixed as
   * {@link fromSeed} mixes a seed). This stream advances by exactly two draws, however much the
   * new one is used later: work handed to several consumers at once (agents generating in
   * parallel) stays reproducible whatever order they finish in.
   */
  split(): RngStream {
    const hi = this.nextUint32();
    const lo = this.nextUint32() >>> 11;
    return RngStream.fromSeed(hi * 2 ** 21 + lo, "split");
  }

  /** Shuffles in place (Fisher–Yates) and returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }

  /** A uniformly random permutation of 0..n-1. */
  permutation(n: number): number[] {
    return this.shuffle(Array.from({ length: n }, (_, i) => i));
  }

  /** An index drawn with probability proportional to the (non-negative, finite) weights. */
  weightedIndex(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) {
      const w = weights[i]!;
      if (!(w >= 0) || !Number.isFinite(w)) throw new RangeError(`weight ${i} is ${w}; weights must be finite and ≥ 0`);
      total += w;
    }
    if (!(total > 0)) throw new RangeError("weights must have a positive sum");
    let u = this.random() * total;
    let last = -1;
    for (let i = 0; i < weights.length; i++) {
      if (weights[i]! <= 0) continue;
      last = i;
      u -= weights[i]!;
      if (u < 0) return i;
    }
    return last; // rounding left u marginally ≥ 0: the last positive weight takes it
  }
}

/**
 * A family of named streams derived from one run seed. `get(name)` creates the stream on first
 * use; `getState()`/`setState()` capture and restore all of them.
 */
export class RngStreams {
  private readonly streams = new Map<string, RngStream>();

  constructor(readonly seed: number) {
    checkSeed(seed);
  }

  get(name: string): RngStream {
    let s = this.streams.get(name);
    if (s === undefined) {
      s = RngStream.fromSeed(this.seed, name);
      this.streams.set(name, s);
    }
    return s;
  }

  getState(): RngStreamsState {
    const streams: Record<string, RngState> = {};
    for (const [name, s] of [...this.streams].sort(([a], [b]) => a.localeCompare(b))) streams[name] = s.getState();
    return { seed: this.seed, streams };
  }

  static fromState(state: RngStreamsState): RngStreams {
    const r = new RngStreams(state.seed);
    r.setState(state);
    return r;
  }

  /**
   * Restores every stream in place, so objects already holding a stream (a comparator, a
   * replay buffer) continue from the saved state. Streams absent from the state restart from
   * their seed.
   */
  setState(state: RngStreamsState): void {
    if (state.seed !== this.seed) throw new Error(`RNG state was saved with seed ${state.seed}, but these streams use seed ${this.seed}`);
    for (const [name, s] of Object.entries(state.streams)) {
      const existing = this.streams.get(name);
      if (existing !== undefined) existing.setState(s);
      else this.streams.set(name, RngStream.fromState(s));
    }
    for (const [name, stream] of this.streams) if (!(name in state.streams)) stream.setState(RngStream.fromSeed(this.seed, name).getState());
  }
}
