// The libtorch backend beyond pbrl's hot kernels (those are in kernels-vs-cpu.test.ts): every
// kernel it registers against the pure-JS `cpu` reference, the tensor table (no id leaks, strings,
// tensors moved from another backend), and its errors. Skips, naming why, when the addon is not
// built; with PBRL_REQUIRE_LIBTORCH=1 (CI where libtorch is installed) a missing addon fails.
import { existsSync, readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import {
  AdamW,
  dropoutMask,
  FUSED_KERNEL_NAMES,
  LIBTORCH_KERNEL_NAMES,
  loadLibtorchAddon,
  loraLinear,
  nativeThreads,
  releaseCachedMemory,
  RngStream,
  setComputePrecision,
  tf,
  useBackend,
} from "../src/index.js";
import { expectSame, rand } from "./compare-backends.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

const maxDiff = (p: tf.Tensor, q: tf.Tensor): number => tf.tidy(() => tf.max(tf.abs(tf.sub(p, q))).dataSync()[0]!);

const x = (): tf.Tensor => rand([3, 5], 1);
const y = (): tf.Tensor => rand([3, 5], 2);
const row = (): tf.Tensor => rand([5], 3);
const pos = (): tf.Tensor => tf.add(tf.abs(x()), 0.1);
const unit = (): tf.Tensor => tf.mul(x(), 0.9);
const ints = (): tf.Tensor => tf.cast(tf.mul(x(), 10), "int32");
const ints2 = (): tf.Tensor => tf.add(tf.cast(tf.mul(tf.abs(y()), 10), "int32"), 1);
const bools = (): tf.Tensor => tf.greater(x(), 0);
const bools2 = (): tf.Tensor => tf.greater(y(), 0);
const idx = (values: number[]): tf.Tensor => tf.tensor1d(values, "int32");

/** One tf op per kernel the libtorch backend registers (pbrl's fused kernels are tested in kernels-vs-cpu). */
const CASES: Record<string, () => tf.Tensor | tf.Tensor[]> = {
  Abs: () => tf.abs(x()),
  Acos: () => tf.acos(unit()),
  Acosh: () => tf.acosh(tf.add(pos(), 1)),
  Asin: () => tf.asin(unit()),
  Asinh: () => tf.asinh(x()),
  Atan: () => tf.atan(x()),
  Atanh: () => tf.atanh(unit()),
  Ceil: () => tf.ceil(tf.mul(x(), 3)),
  Cos: () => tf.cos(x()),
  Cosh: () => tf.cosh(x()),
  Elu: () => tf.elu(tf.mul(x(), 3)),
  Erf: () => tf.erf(x()),
  Exp: () => [tf.exp(x()), tf.exp(ints())],
  Expm1: () => tf.expm1(x()),
  Floor: () => tf.floor(tf.mul(x(), 3)),
  IsFinite: () => tf.isFinite(tf.div(x(), tf.round(y()))),
  IsInf: () => tf.isInf(tf.div(x(), tf.round(y()))),
  IsNan: () => tf.isNaN(tf.sqrt(x())),
  Log: () => tf.log(pos()),
  Log1p: () => tf.log1p(pos()),
  LogicalNot: () => tf.logicalNot(bools()),
  Neg: () => [tf.neg(x()), tf.neg(ints())],
  Reciprocal: () => tf.reciprocal(pos()),
  Relu: () => tf.relu(x()),
  Relu6: () => tf.relu6(tf.mul(x(), 10)),
  Round: () => tf.round(tf.tensor1d([0.5, 1.5, 2.5, -0.5, -1.5, 0.49, 2.51])),
  Rsqrt: () => tf.rsqrt(pos()),
  Selu: () => tf.selu(x()),
  Sigmoid: () => tf.sigmoid(tf.mul(x(), 10)),
  Sign: () => [tf.sign(x()), tf.sign(ints())],
  Sin: () => tf.sin(x()),
  Sinh: () => tf.sinh(x()),
  Softplus: () => tf.softplus(tf.mul(x(), 30)),
  Sqrt: () => tf.sqrt(pos()),
  Square: () => [tf.square(x()), tf.square(ints())],
  Tan: () => tf.tan(unit()),
  Tanh: () => tf.tanh(x()),
  Add: () => [tf.add(x(), row()), tf.add(ints(), ints2()), tf.add(x(), 2)],
  Sub: () => [tf.sub(x(), y()), tf.sub(ints(), ints2())],
  Multiply: () => [tf.mul(x(), tf.reshape(row(), [1, 5])), tf.mul(ints(), ints2())],
  RealDiv: () => tf.div(x(), pos()),
  FloorDiv: () => [tf.floorDiv(ints(), ints2()), tf.floorDiv(tf.mul(x(), 7), pos())],
  Mod: () => [tf.mod(ints(), ints2()), tf.mod(tf.mul(x(), 7), pos())],
  Maximum: () => [tf.maximum(x(), y()), tf.maximum(ints(), ints2())],
  Minimum: () => [tf.minimum(x(), y()), tf.minimum(ints(), ints2())],
  Pow: () => [tf.pow(pos(), y()), tf.pow(ints(), tf.tensor([2], [1], "int32"))],
  SquaredDifference: () => tf.squaredDifference(x(), y()),
  Atan2: () => tf.atan2(x(), y()),
  Prelu: () => tf.prelu(x(), tf.mul(tf.abs(row()), 0.3)),
  Equal: () => [tf.equal(ints(), ints2()), tf.equal(x(), x())],
  NotEqual: () => tf.notEqual(ints(), ints2()),
  Less: () => tf.less(x(), y()),
  LessEqual: () => tf.lessEqual(ints(), ints2()),
  Greater: () => tf.greater(x(), y()),
  GreaterEqual: () => tf.greaterEqual(ints(), ints2()),
  LogicalAnd: () => tf.logicalAnd(bools(), bools2()),
  LogicalOr: () => tf.logicalOr(bools(), bools2()),
  LogicalXor: () => tf.logicalXor(bools(), bools2()),
  Sum: () => [tf.sum(x(), 1), tf.sum(x(), [0, 1], true), tf.sum(ints(), 0), tf.sum(bools(), 1)],
  Mean: () => [tf.mean(x(), 0), tf.mean(x(), -1, true)],
  Max: () => [tf.max(x(), 1), tf.max(ints(), 0, true), tf.max(x())],
  Min: () => [tf.min(x(), 0), tf.min(ints(), [0, 1])],
  Prod: () => [tf.prod(tf.add(x(), 1), 1), tf.prod(ints2(), 0)],
  All: () => [tf.all(bools(), 1), tf.all(bools(), [0, 1], true)],
  Any: () => [tf.any(bools(), 0), tf.any(bools())],
  Identity: () => tf.clone(x()),
  Cast: () => [tf.cast(tf.mul(x(), 7), "int32"), tf.cast(ints(), "bool"), tf.cast(bools(), "float32"), tf.cast(ints(), "float32")],
  AddN: () => tf.addN([x(), y(), x()]),
  ClipByValue: () => tf.clipByValue(x(), -0.3, 0.4),
  LeakyRelu: () => tf.leakyRelu(x(), 0.15),
  Step: () => tf.step(x(), 0.25),
  Select: () => tf.where(bools(), x(), y()),
  Fill: () => [tf.fill([2, 3], 1.5), tf.fill([4], 7, "int32")],
  ZerosLike: () => [tf.zerosLike(x()), tf.zerosLike(ints())],
  OnesLike: () => [tf.onesLike(x()), tf.onesLike(bools())],
  Range: () => [tf.range(0, 10, 3), tf.range(5, -2, -1.5), tf.range(0, 7, 2, "int32"), tf.range(3, 3)],
  OneHot: () => [tf.oneHot(idx([0, 3, 1, 7]), 5), tf.oneHot(idx([2, 0]), 3, 2, -1)],
  Reshape: () => tf.reshape(x(), [5, -1]),
  Transpose: () => tf.transpose(rand([2, 3, 4], 4), [2, 0, 1]),
  Slice: () => tf.slice(rand([4, 6], 5), [1, 2], [2, -1]),
  StridedSlice: () => [tf.stridedSlice(rand([6, 7], 6), [1, 0], [5, 7], [2, 3]), tf.stridedSlice(rand([4, 5], 7), [0, 1], [3, 4], [1, 1], 0, 0, 0, 0, 1)],
  Concat: () => [tf.concat([x(), y()], 1), tf.concat([ints(), ints2()], 0)],
  Pack: () => tf.stack([x(), y()], 1),
  Unpack: () => tf.unstack(rand([3, 2, 4], 8), 1),
  SplitV: () => tf.split(rand([4, 6], 9), [1, 2, 3], 1),
  Tile: () => tf.tile(x(), [2, 3]),
  PadV2: () =>
    tf.pad(
      x(),
      [
        [1, 0],
        [2, 3],
      ],
      0.5,
    ),
  Reverse: () => tf.reverse(rand([2, 3, 4], 10), [0, 2]),
  BroadcastTo: () => tf.broadcastTo(row(), [2, 4, 5]),
  GatherV2: () => [
    tf.gather(x(), idx([2, 0, 2]), 0),
    tf.gather(x(), idx([4, 1]), 1),
    tf.gather(
      rand([2, 3, 4], 11),
      tf.tensor2d(
        [
          [0, 2],
          [1, 1],
        ],
        [2, 2],
        "int32",
      ),
      1,
      1,
    ),
  ],
  GatherNd: () =>
    tf.gatherND(
      rand([3, 4, 2], 12),
      tf.tensor2d(
        [
          [0, 1],
          [2, 3],
          [1, 0],
        ],
        [3, 2],
        "int32",
      ),
    ),
  ScatterNd: () => tf.scatterND(tf.tensor2d([[1], [3], [1]], [3, 1], "int32"), rand([3, 4], 13), [5, 4]),
  UnsortedSegmentSum: () => tf.unsortedSegmentSum(rand([5, 3], 14), tf.tensor1d([0, 2, 0, 1, 2], "int32"), 4),
  ArgMax: () => [tf.argMax(x(), 1), tf.argMax(tf.tensor1d([1, 3, 3, 2]))],
  ArgMin: () => tf.argMin(x(), 0),
  Softmax: () => tf.softmax(tf.mul(x(), 5)),
  Cumsum: () => [tf.cumsum(x(), 1), tf.cumsum(x(), 0, true, true), tf.cumsum(ints(), 1, false, true)],
  Cumprod: () => [tf.cumprod(tf.add(x(), 1), 1), tf.cumprod(tf.add(x(), 1), 0, true)],
  TopK: () => {
    const { values, indices } = tf.topk(rand([3, 8], 15), 3);
    return [values, indices];
  },
  BatchMatMul: () => [tf.matMul(x(), y(), false, true), tf.matMul(rand([2, 3, 4], 16), rand([4, 2], 17))],
  _FusedMatMul: () => tf.fused.matMul({ a: x(), b: y(), transposeB: true, bias: tf.tensor1d([0.1, -0.2, 0.3]), activation: "relu" }),
};

describe.skipIf(missing !== undefined)(`libtorch backend${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  afterEach(async () => {
    await useBackend("wasm");
  });

  it("is available and says which libtorch runs it", async () => {
    expect(load.ok, load.ok ? "" : load.reason).toBe(true);
    const info = await useBackend("libtorch");
    expect(info.description).toMatch(
      /^tensor backend: libtorch \(libtorch \d+\.\d+\.\d+, ATen \w+ CPU kernels.*, float32 CPU products: (OpenBLAS \w+ kernels \(.+\), measured \d+ GFLOPS to ATen's \d+|ATen's, measured \d+ GFLOPS to \d+ for OpenBLAS \w+ kernels \(.+\)|this addon was built without OpenBLAS|set by PBRL_LIBTORCH_GEMM.*)(; at most 64 rows \(decoding\): (OpenBLAS, measured \d+ GFLOPS to ATen's \d+|ATen's, measured \d+ GFLOPS to OpenBLAS's \d+) on 16 rows)?, bf16 CPU products: (bfloat16 GEMMs|float32 GEMMs over bfloat16 operands \(no AVX512-BF16 or AMX\)); \d+ threads?.*\), tfjs 4\.22\.0$/,
    );
    for (const name of [...LIBTORCH_KERNEL_NAMES, ...FUSED_KERNEL_NAMES]) expect(tf.getKernel(name, "libtorch"), name).toBeDefined();
  });

  it("runs every kernel it registers as the cpu backend does", async () => {
    const untested = LIBTORCH_KERNEL_NAMES.filter((k) => CASES[k] === undefined && !FUSED_KERNEL_NAMES.includes(k));
    expect(untested).toEqual([]);
    for (const [name, f] of Object.entries(CASES)) {
      await expectSame("libtorch", f, 2e-6).catch((e: unknown) => {
        throw new Error(`${name}: ${e instanceof Error ? e.message : String(e)}`);
      });
    }
  });

  it("computes float32 products alike through OpenBLAS and ATen, few (≤ 64) rows chosen apart, transposed, strided and empty operands included", async () => {
    if (!load.ok) return;
    const blas = load.addon.blasInfo();
    const cases = (): tf.Tensor[] => [
      tf.matMul(rand([37, 53], 20), rand([53, 29], 21)),
      tf.matMul(rand([53, 37], 22), rand([29, 53], 23), true, true),
      tf.matMul(tf.slice(rand([40, 60], 24), [0, 5], [40, 50]), rand([50, 7], 25)), // a strided slice
      tf.matMul(rand([1, 64], 26), rand([64, 1], 27)),
      tf.matMul(tf.zeros([4, 0]), tf.zeros([0, 3])),
      tf.matMul(rand([97, 45], 28), rand([45, 19], 29)), // past the few-rows bound
    ];
    const choices = blas.linked
      ? [
          [true, true],
          [false, false],
          [true, false],
          [false, true],
        ]
      : [[false, false]];
    try {
      for (const [openblas, fewRows] of choices as [boolean, boolean][]) {
        load.addon.useOpenBlas(openblas, 2, fewRows);
        expect([load.addon.blasInfo().chosen, load.addon.blasInfo().chosenFewRows]).toEqual([openblas, fewRows]);
        await expectSame("libtorch", cases, 1e-5);
      }
    } finally {
      load.addon.useOpenBlas(blas.chosen, 2, blas.chosenFewRows);
    }
  });

  it("fuses a linear layer with its LoRA update, x·Wᵀ + bias + s·(dropout(x)·Aᵀ)·Bᵀ, with the tfjs ops' value, gradients and dropout draws", async () => {
    await useBackend("libtorch");
    // 21 rows (not a multiple of the kernels' 8-row blocks), 37 inputs, 11 outputs (not a multiple of 16 lanes), rank 3.
    const [n, inp, out, r, s] = [21, 37, 11, 3, 0.7];
    const w = rand([out, inp], 30) as tf.Tensor2D;
    const bias = rand([out], 36) as tf.Tensor1D;
    const x = rand([n, inp], 32) as tf.Tensor2D;
    const a = rand([r, inp], 33) as tf.Tensor2D;
    const b = rand([out, r], 34) as tf.Tensor2D;
    const dy = rand([n, out], 35) as tf.Tensor2D;
    for (const [p, withBias, precision] of [
      [0, false, "float32"],
      [0.3, true, "float32"],
      [0.3, true, "bf16"],
    ] as const) {
      setComputePrecision(precision);
      const fused = RngStream.fromSeed(3, "lora");
      const ops = RngStream.fromSeed(3, "lora");
      const dropout = p > 0 ? { rng: fused, p } : undefined;
      const bi = withBias ? bias : undefined;
      const f = (xi: tf.Tensor, ai: tf.Tensor, bb: tf.Tensor): tf.Tensor =>
        tf.sum(tf.mul(loraLinear(xi as tf.Tensor2D, w, bi, ai as tf.Tensor2D, bb as tf.Tensor2D, s, dropout), dy));
      const g = (xi: tf.Tensor, ai: tf.Tensor, bb: tf.Tensor): tf.Tensor => {
        const xd = p > 0 ? tf.mul(xi, dropoutMask(ops, [n, inp], p)) : xi;
        const base = tf.matMul(xi, w, false, true);
        const y = bi !== undefined ? tf.add(base, bi) : base;
        return tf.sum(tf.mul(tf.add(y, tf.matMul(tf.mul(tf.matMul(xd, ai, false, true), s), bb, false, true)), dy));
      };
      const got = tf.grads(f)([x, a, b]);
      const want = tf.grads(g)([x, a, b]);
      // bf16: both sides round the base product's operands to bfloat16 (the update stays float32 in the fused kernel).
      const tol = precision === "bf16" ? 0.05 : 1e-5;
      for (let i = 0; i < 3; i++) expect(maxDiff(got[i]!, want[i]!), `gradient ${i}, p = ${p}, ${precision}`).toBeLessThan(tol);
      expect(maxDiff(f(x, a, b), g(x, a, b))).toBeLessThan(precision === "bf16" ? 0.5 : 1e-4);
      // Both streams drew the same keys (two passes each), or none without dropout.
      expect(fused.getState()).toEqual(ops.getState());
      if (p > 0) expect(fused.getState()).not.toEqual(RngStream.fromSeed(3, "lora").getState());
    }
    setComputePrecision("float32");
  });

  it("frees every tensor it made: the addon's table returns to where it was", async () => {
    if (!load.ok) return;
    await useBackend("libtorch");
    const before = load.addon.live();
    const g = tf.tidy(() => tf.grad((v: tf.Tensor) => tf.sum(tf.matMul(tf.softmax(tf.matMul(v, v, false, true)), v)))(rand([6, 4], 18)));
    g.dispose();
    expect(load.addon.live()).toBe(before);
  });

  // Linux only (page faults from /proc), and where the cache may hold 600 MB (a quarter of the memory by default).
  it.skipIf(!existsSync("/proc/self/stat") || totalmem() < 4 * (1200 << 20) || process.env["PBRL_LIBTORCH_CPU_CACHE_MB"] !== undefined)(
    "keeps large CPU blocks for reuse: a block split for two tensors serves one of their joint size again without new pages",
    async () => {
      if (!load.ok) return;
      await useBackend("libtorch");
      // Minor page faults of this process: a block whose pages are already resident takes none.
      const faults = (): number => Number(readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")[7]);
      const cachedMB = (): number => load.addon.info().cpuCacheMB;
      const mb = (n: number): number => (n << 20) / 4; // float32 elements
      // Sizes larger than any block another test leaves cached, so each request meets these blocks.
      tf.fill([mb(600)], 1).dispose();
      const whole = cachedMB();
      expect(whole).toBeGreaterThanOrEqual(600);
      const head = tf.fill([mb(240)], 2); // the head of the 600 MB block; the rest stays cached
      const tail = tf.fill([mb(360)], 3); // that rest, whole
      expect(cachedMB()).toBeCloseTo(whole - 600, 0);
      tf.dispose([head, tail]); // joined again into one 600 MB block
      expect(cachedMB()).toBeCloseTo(whole, 0);
      const before = faults();
      const again = tf.fill([mb(600)], 4);
      const touched = faults() - before;
      expect(cachedMB()).toBeCloseTo(whole - 600, 0);
      // Served from two separate blocks it would map (or mremap) 240–360 MB anew: 60,000+ faults of 4 KB pages.
      expect(touched).toBeLessThan(5000);
      expect(again.dataSync()[mb(600) - 1]).toBe(4);
      again.dispose();
    },
  );

  it.skipIf(!existsSync("/proc/self/status") || totalmem() < 4 * (600 << 20) || process.env["PBRL_LIBTORCH_CPU_CACHE_MB"] !== undefined)(
    "releaseCachedMemory gives the cached blocks back to the system between phases: the cache empties and the process's resident memory falls",
    async () => {
      if (!load.ok) return;
      await useBackend("libtorch");
      const residentMB = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))![1]) / 1024;
      const t = tf.fill([(300 << 20) / 4], 1); // 300 MB, touched: resident
      t.dispose(); // cached for the next request of its size, still resident
      expect(load.addon.info().cpuCacheMB).toBeGreaterThanOrEqual(300);
      const before = residentMB();
      const released = releaseCachedMemory();
      expect(released).toBeGreaterThanOrEqual(300);
      expect(load.addon.info().cpuCacheMB).toBe(0);
      expect(before - residentMB()).toBeGreaterThan(250);
      await useBackend("cpu");
      expect(releaseCachedMemory()).toBe(0); // no cache of its own elsewhere
    },
  );

  it("AdamW updates weights in place only when nothing else shares them: clones and views keep their values", async () => {
    const run = async (backend: "libtorch" | "cpu"): Promise<number[][]> => {
      await useBackend(backend);
      const p = tf.variable(tf.tensor1d([1, -2, 3, 0.5]), true, `adamw-${backend}`);
      const q = tf.variable(tf.tensor1d([4, 5, -6, 7]), true, `adamw-q-${backend}`);
      const copy = tf.clone(p);
      const view = tf.reshape(p, [2, 2]);
      const opt = new AdamW(
        new Map([
          ["p", p],
          ["q", q],
        ]),
        { lr: 0.1, weightDecay: 0.01 },
      );
      const g = tf.tensor1d([0.3, -0.1, 0.2, 1]);
      for (let i = 0; i < 3; i++)
        opt.step(
          new Map([
            ["p", g],
            ["q", g],
          ]),
        );
      const out = [copy, view, p, q].map((t) => Array.from(t.dataSync()));
      tf.dispose([p, q, copy, view, g]);
      opt.dispose();
      return out;
    };
    const [copy, view, p, q] = await run("libtorch");
    expect(copy).toEqual([1, -2, 3, 0.5]);
    expect(view).toEqual([1, -2, 3, 0.5]);
    const [, , pRef, qRef] = await run("cpu");
    for (const [got, want] of [
      [p!, pRef!],
      [q!, qRef!],
    ] as const)
      got.forEach((x, i) => expect(Math.abs(x - want[i]!)).toBeLessThan(1e-6));
    expect(p).not.toEqual([1, -2, 3, 0.5]);
  });

  it("holds string tensors, takes tensors from another backend, and names a kernel it does not have", async () => {
    await useBackend("wasm");
    const fromWasm = tf.tensor2d([
      [1, 2],
      [3, 4],
    ]);
    await useBackend("libtorch");
    const s = tf.tensor1d(["a", "bc"]);
    expect(s.dataSync()).toEqual(["a", "bc"]);
    const doubled = tf.mul(fromWasm, 2);
    expect(Array.from(doubled.dataSync())).toEqual([2, 4, 6, 8]);
    expect(() => tf.conv1d(tf.zeros([1, 4, 1]) as tf.Tensor3D, tf.zeros([2, 1, 1]) as tf.Tensor3D, 1, "valid")).toThrow(
      /Kernel 'Conv2D' not registered for backend 'libtorch'/,
    );
    expect(() => tf.gather(tf.zeros([4, 3]), idx([1, 4]))).toThrow(/gather: index 4 outside \[0, 4\)/);
    tf.dispose([fromWasm, s, doubled]);
  });
});
