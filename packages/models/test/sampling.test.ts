import { describe, expect, it } from "vitest";
import {
  libtorchSampleRows,
  loadLibtorchAddon,
  loadNativeAddon,
  nativeSampleRows,
  nativeThreads,
  RngStream,
  tf,
  useBackend,
  type BackendName,
} from "@pbrl/core-tensor";
import { argmax, chooseToken, samplingDistribution, validateSampling, type SamplingOptions } from "../src/index.js";

const opts = (o: Partial<SamplingOptions>): SamplingOptions => ({ greedy: false, temperature: 1, topK: 0, topP: 1, ...o });
const close = (a: ArrayLike<number>, b: number[]) => b.forEach((v, i) => expect(a[i]).toBeCloseTo(v, 9));

describe("sampling distribution (hand-computed)", () => {
  const logits = [Math.log(1), Math.log(2), Math.log(3), Math.log(4)]; // softmax = [.1 .2 .3 .4]

  it("plain softmax", () => close(samplingDistribution(logits, opts({})), [0.1, 0.2, 0.3, 0.4]));

  it("temperature divides the logits", () => {
    // T = 0.5 squares the ratios: 1,4,9,16 / 30
    close(samplingDistribution(logits, opts({ temperature: 0.5 })), [1 / 30, 4 / 30, 9 / 30, 16 / 30]);
  });

  it("top-k keeps the k most likely", () => close(samplingDistribution(logits, opts({ topK: 2 })), [0, 0, 3 / 7, 4 / 7]));

  it("top-p keeps the smallest set reaching p (transformers' rule)", () => {
    // ascending .1 .2 .3 .4: cumulative .1 .3 .6 1; with p = 0.7 remove while cum ≤ 0.3 → drop .1 and .2
    close(samplingDistribution(logits, opts({ topP: 0.7 })), [0, 0, 3 / 7, 4 / 7]);
    // p = 0.75: remove while cum ≤ 0.25 → drop only .1
    close(samplingDistribution(logits, opts({ topP: 0.75 })), [0, 2 / 9, 3 / 9, 4 / 9]);
    // p tiny: the most likely token always stays
    close(samplingDistribution(logits, opts({ topP: 0.01 })), [0, 0, 0, 1]);
  });

  it("applies temperature, then top-k, then top-p", () => {
    // T=0.5 → [1,4,9,16]/30; top-k 3 → [0,4,9,16]/29; top-p 0.6 drops cum ≤ 0.4: 4/29 ≈ .138 → dropped
    close(samplingDistribution(logits, opts({ temperature: 0.5, topK: 3, topP: 0.6 })), [0, 0, 9 / 25, 16 / 25]);
  });
});

describe("token choice", () => {
  it("greedy takes the first maximum, as torch.argmax", () => {
    expect(argmax([1, 3, 3, 2])).toBe(1);
    expect(chooseToken([0, 5, 1], opts({ greedy: true }), undefined)).toBe(1);
  });

  it("sampling is reproducible from the seed and follows the distribution", () => {
    const logits = [0, Math.log(3)]; // p = [.25, .75]
    const draw = (seed: number): number[] => {
      const r = RngStream.fromSeed(seed, "s");
      return Array.from({ length: 4000 }, () => chooseToken(logits, opts({}), r));
    };
    expect(draw(1)).toEqual(draw(1));
    expect(draw(1)).not.toEqual(draw(2));
    const share = draw(3).filter((t) => t === 1).length / 4000;
    expect(share).toBeGreaterThan(0.72);
    expect(share).toBeLessThan(0.78);
  });

  it("rejects invalid settings and sampling without a stream", () => {
    expect(() => validateSampling(opts({ temperature: 0 }))).toThrow(/temperature must be > 0/);
    expect(() => validateSampling(opts({ topP: 0 }))).toThrow(/top_p must be in \(0, 1\]/);
    expect(() => validateSampling(opts({ topK: -1 }))).toThrow(/top_k/);
    expect(() => chooseToken([1, 2], opts({}), undefined)).toThrow(/seeded RngStream/);
  });
});

describe("plain sampling on the native backend", () => {
  const load = loadNativeAddon();
  // The addon's float64 sampler replaces chooseToken for plain sampling on native (generate.ts):
  // from the same uniform draws it must pick the same tokens.
  it.skipIf(!load.ok)("draws the same tokens as chooseToken from the same uniforms", async () => {
    const previous = tf.getBackend();
    await useBackend("native");
    try {
      const rows = 200;
      const vocab = 1000;
      const data = RngStream.fromSeed(3, "logits");
      for (const temperature of [0.3, 1, 2.5]) {
        const logits = Float32Array.from({ length: rows * vocab }, () => (data.random() - 0.5) * 12);
        const uniforms = Float64Array.from({ length: rows }, (_, i) => (i % 17 === 0 ? -1 : data.random()));
        const out = new Int32Array(rows).fill(-7);
        nativeSampleRows(logits, uniforms, temperature, out);
        for (let r = 0; r < rows; r++) {
          if (uniforms[r]! < 0) {
            expect(out[r]).toBe(-7); // skipped rows are left alone
            continue;
          }
          const rng = { random: () => uniforms[r]! } as unknown as RngStream;
          expect(out[r], `row ${r}, temperature ${temperature}`).toBe(
            chooseToken(logits.subarray(r * vocab, (r + 1) * vocab), { greedy: false, temperature, topK: 0, topP: 1 }, rng),
          );
        }
      }
    } finally {
      await useBackend(previous as BackendName);
    }
  });
});

describe("sampling on the libtorch backend", () => {
  const load = loadLibtorchAddon(nativeThreads());
  const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;
  // On libtorch each row's token is chosen where the logits lie (generate.ts), for every sampling
  // setting: from the same uniform draws it must pick the tokens chooseToken picks on the host.
  it.skipIf(missing !== undefined)("draws the tokens chooseToken draws, with temperature, top-k, top-p and greedy, skipping done rows", async () => {
    const previous = tf.getBackend();
    await useBackend("libtorch");
    try {
      const rows = 120;
      const vocab = 500;
      const data = RngStream.fromSeed(4, "logits");
      const settings = [
        { greedy: false, temperature: 1, topK: 0, topP: 1 },
        { greedy: false, temperature: 0.6, topK: 50, topP: 1 },
        { greedy: false, temperature: 0.6, topK: 0, topP: 0.6 },
        { greedy: false, temperature: 0.6, topK: 50, topP: 0.6 }, // the trainers' defaults
        { greedy: false, temperature: 2.5, topK: 3, topP: 0.9 },
        { greedy: true, temperature: 1, topK: 0, topP: 1 },
      ];
      for (const o of settings) {
        const values = Float32Array.from({ length: rows * vocab }, () => Math.round((data.random() - 0.5) * 24) / 2); // ties included
        const uniforms = Float64Array.from({ length: rows }, (_, i) => (i % 13 === 0 ? -1 : data.random()));
        const logits = tf.tensor2d(values, [rows, vocab]);
        const out = libtorchSampleRows(logits, uniforms, o);
        logits.dispose();
        for (let r = 0; r < rows; r++) {
          if (uniforms[r]! < 0 && !o.greedy) {
            expect(out[r]).toBe(0);
            continue;
          }
          const rng = { random: () => uniforms[r]! } as unknown as RngStream;
          expect(out[r], `row ${r}, ${JSON.stringify(o)}`).toBe(chooseToken(values.subarray(r * vocab, (r + 1) * vocab), o, rng));
        }
      }
    } finally {
      await useBackend(previous as BackendName);
    }
  });

  // CPU float32 logits take the addon's row loop, anything else ATen's tensor path: a row whose
  // mass is not finite sends the whole call to ATen, and a strided view goes there directly; both must draw chooseToken's tokens for the ordinary rows.
  it.skipIf(missing !== undefined)("draws chooseToken's tokens on ATen's path too: a row with an infinite logit, a strided view", async () => {
    const previous = tf.getBackend();
    await useBackend("libtorch");
    try {
      const rows = 40;
      const vocab = 300;
      const o = { greedy: false, temperature: 0.6, topK: 50, topP: 0.6 };
      const data = RngStream.fromSeed(9, "aten path");
      const values = Float32Array.from({ length: rows * vocab }, () => Math.round((data.random() - 0.5) * 24) / 2);
      const uniforms = Float64Array.from({ length: rows }, () => data.random());
      const expected = (r: number) => chooseToken(values.subarray(r * vocab, (r + 1) * vocab), o, { random: () => uniforms[r]! } as unknown as RngStream);
      const withInfinity = Float32Array.from(values);
      withInfinity[7 * vocab + 3] = Infinity;
      const infinite = tf.tensor2d(withInfinity, [rows, vocab]);
      // The first `vocab` columns of a wider tensor: a view whose rows lie vocab + 4 floats apart.
      const wide = Float32Array.from({ length: rows * (vocab + 4) }, (_, i) =>
        i % (vocab + 4) < vocab ? values[Math.floor(i / (vocab + 4)) * vocab + (i % (vocab + 4))]! : 50,
      );
      const wideTensor = tf.tensor2d(wide, [rows, vocab + 4]);
      const strided = tf.slice(wideTensor, [0, 0], [rows, vocab]);
      const fromInfinite = libtorchSampleRows(infinite, uniforms, o);
      const fromStrided = libtorchSampleRows(strided, uniforms, o);
      tf.dispose([infinite, wideTensor, strided]);
      for (let r = 0; r < rows; r++) {
        expect(fromStrided[r], `strided row ${r}`).toBe(expected(r));
        if (r !== 7) expect(fromInfinite[r], `row ${r} beside an infinite one`).toBe(expected(r));
      }
    } finally {
      await useBackend(previous as BackendName);
    }
  });
});
