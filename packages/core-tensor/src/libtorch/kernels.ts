/**
 * The tfjs kernels of the `libtorch` backend, each a call into the addon (one or a few ATen ops).
 * Together they cover every kernel pbrl's models, heads, losses, optimizers, sampling and scoring
 * run (counted by wrapping tfjs's runKernel over the test suites), and the common tfjs ops around
 * them. A kernel that is not here is an error naming it (tfjs: "Kernel 'X' not registered for
 * backend 'libtorch'"), never a silent round trip through host memory.
 */
import type { DataType, KernelFunc, NamedAttrMap, NamedTensorInfoMap, TensorInfo } from "@tensorflow/tfjs-core";
import * as kernel from "../fused-kernel-names.js";
import { tf } from "../tf.js";
import { dtypeCode, type LibtorchBackend } from "./backend.js";

interface Args {
  inputs: NamedTensorInfoMap;
  backend: LibtorchBackend;
  attrs: NamedAttrMap;
}
type Kernel = (args: Args) => TensorInfo | TensorInfo[];

const UNARY = [
  "Abs",
  "Acos",
  "Acosh",
  "Asin",
  "Asinh",
  "Atan",
  "Atanh",
  "Ceil",
  "Cos",
  "Cosh",
  "Elu",
  "Erf",
  "Exp",
  "Expm1",
  "Floor",
  "IsFinite",
  "IsInf",
  "IsNan",
  "Log",
  "Log1p",
  "LogicalNot",
  "Neg",
  "Reciprocal",
  "Relu",
  "Relu6",
  "Round",
  "Rsqrt",
  "Selu",
  "Sigmoid",
  "Sign",
  "Sin",
  "Sinh",
  "Softplus",
  "Sqrt",
  "Square",
  "Tan",
  "Tanh",
];
const ARITHMETIC = ["Add", "Sub", "Multiply", "RealDiv", "FloorDiv", "Mod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Atan2", "Prelu"];
const COMPARISON = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalXor"];
const REDUCTIONS = ["Sum", "Mean", "Max", "Min", "Prod", "All", "Any"];

const x = (a: Args): TensorInfo => a.inputs["x"]!;
const id = (a: Args, t: TensorInfo): number => a.backend.id(t);
const axes = (axis: unknown, shape: number[]): number[] => tf.util.parseAxisParam(axis as number | number[], shape);

function unary(name: string): Kernel {
  return (a) => a.backend.out(a.backend.addon.unary(name, id(a, x(a))));
}

function binary(name: string, bool: boolean): Kernel {
  return (a) => {
    const l = a.inputs["a"] ?? a.inputs["x"]!;
    const r = a.inputs["b"] ?? a.inputs["alpha"]!;
    const dtype: DataType = bool ? "bool" : tf.upcastType(l.dtype, r.dtype);
    return a.backend.out(a.backend.addon.binary(name, id(a, l), id(a, r), dtypeCode(dtype)));
  };
}

function reduction(name: string): Kernel {
  // Max names its axes `reductionIndices`, the others `axis`.
  return (a) =>
    a.backend.out(a.backend.addon.reduce(name, id(a, x(a)), axes(a.attrs["axis"] ?? a.attrs["reductionIndices"], x(a).shape), a.attrs["keepDims"] === true));
}

/** tfjs's Concat and Pack leave empty inputs out of the result. */
function nonEmpty(a: Args): TensorInfo[] {
  return (Object.values(a.inputs) as TensorInfo[]).filter((t) => tf.util.sizeFromShape(t.shape) > 0 || t.shape.length === 0);
}

const matMul: Kernel = (a) => {
  const { inputs, attrs, backend } = a;
  const { bias, preluActivationWeights: prelu } = inputs;
  const activation = String(attrs["activation"] ?? "linear");
  const opt = (t: TensorInfo | undefined): number | null => (t === undefined ? null : id(a, t));
  // In bf16 a product with a weight operand returns a bfloat16 activation (as torch.autocast's
  // linear layers do); one without (a weight's gradient) returns float32.
  const bf16 = backend.addon.bf16();
  const [weightA, weightB] = [bf16 && backend.isWeight(inputs["a"]!), bf16 && backend.isWeight(inputs["b"]!)];
  return backend.out(
    backend.addon.matmul(
      id(a, inputs["a"]!),
      id(a, inputs["b"]!),
      attrs["transposeA"] === true,
      attrs["transposeB"] === true,
      opt(bias),
      activation,
      Number(attrs["leakyreluAlpha"] ?? 0),
      opt(prelu),
      weightA,
      weightB,
    ),
  );
};

const stridedSlice: Kernel = (a) => {
  const t = x(a);
  const at = a.attrs as unknown as {
    begin: number[];
    end: number[];
    strides: number[];
    beginMask: number;
    endMask: number;
    ellipsisMask: number;
    newAxisMask: number;
    shrinkAxisMask: number;
  };
  const info = tf.slice_util.sliceInfo(t.shape, at.begin, at.end, at.strides, at.beginMask, at.endMask, at.ellipsisMask, at.newAxisMask, at.shrinkAxisMask);
  const addon = a.backend.addon;
  if (info.isIdentity) return a.backend.out(addon.reshape(id(a, t), info.finalShape));
  const sliced = addon.stridedSlice(id(a, t), info.begin, info.end, info.strides);
  const out = addon.reshape(sliced[0]!, info.finalShape);
  addon.free(sliced[0]!);
  return a.backend.out(out);
};

const range: Kernel = (a) => {
  const { start, stop, step, dtype } = a.attrs as unknown as { start: number; stop: number; step: number; dtype: DataType };
  const count = step === 0 || (stop - start) / step <= 0 ? 0 : Math.ceil((stop - start) / step);
  return a.backend.out(a.backend.addon.range(start, step, count, dtypeCode(dtype)));
};

const FUSED: Record<kernel.FusedKernelName, Kernel> = {
  [kernel.PBRL_RMS_NORM]: (a) => a.backend.addon.rmsnorm(id(a, x(a)), id(a, a.inputs["weight"]!), a.attrs["eps"] as number).map((r) => a.backend.out(r)),
  [kernel.PBRL_RMS_NORM_GRAD]: (a) => {
    const i = a.inputs;
    return a.backend.addon.rmsnormGrad(id(a, i["x"]!), id(a, i["weight"]!), id(a, i["rstd"]!), id(a, i["dy"]!)).map((r) => a.backend.out(r));
  },
  [kernel.PBRL_SWIGLU]: (a) => a.backend.out(a.backend.addon.swiglu(id(a, a.inputs["gate"]!), id(a, a.inputs["up"]!))),
  [kernel.PBRL_SWIGLU_GRAD]: (a) =>
    a.backend.addon.swigluGrad(id(a, a.inputs["gate"]!), id(a, a.inputs["up"]!), id(a, a.inputs["dy"]!)).map((r) => a.backend.out(r)),
  [kernel.PBRL_ROPE]: (a) => a.backend.out(a.backend.addon.rope(id(a, x(a)), id(a, a.inputs["cos"]!), id(a, a.inputs["sin"]!), a.attrs["backward"] === 1)),
  [kernel.PBRL_LOG_SOFTMAX_SELECT]: (a) => a.backend.addon.logsoftmaxSelect(id(a, x(a)), id(a, a.inputs["targets"]!)).map((r) => a.backend.out(r)),
  [kernel.PBRL_LOG_SOFTMAX_GRAD]: (a) => {
    const i = a.inputs;
    return a.backend.out(a.backend.addon.logsoftmaxGrad(id(a, i["x"]!), id(a, i["lse"]!), id(a, i["targets"]!), id(a, i["dy"]!)));
  },
  [kernel.PBRL_SCATTER_ADD_ROWS]: (a) =>
    a.backend.out(a.backend.addon.scatterAddRows(id(a, a.inputs["dy"]!), id(a, a.inputs["indices"]!), a.attrs["rows"] as number)),
  [kernel.PBRL_ADAMW]: (a) => {
    const i = a.inputs;
    // The addon may update p, m and v in place only when no other tfjs tensor shares their data.
    const mayOverwrite = [i["p"]!, i["m"]!, i["v"]!].every((t) => a.backend.refCount(t.dataId) === 1);
    return a.backend.addon
      .adamw(id(a, i["p"]!), id(a, i["g"]!), id(a, i["m"]!), id(a, i["v"]!), ...kernel.adamwAttrValues(a.attrs), mayOverwrite)
      .map((r) => a.backend.out(r));
  },
  [kernel.PBRL_ATTENTION]: (a) => {
    const i = a.inputs;
    return a.backend.addon
      .attention(id(a, i["q"]!), id(a, i["k"]!), id(a, i["v"]!), id(a, i["keyMask"]!), a.attrs["scale"] as number)
      .map((r) => a.backend.out(r));
  },
  [kernel.PBRL_ATTENTION_GRAD]: (a) => {
    const i = a.inputs;
    return a.backend.addon
      .attentionGrad(id(a, i["q"]!), id(a, i["k"]!), id(a, i["v"]!), id(a, i["keyMask"]!), id(a, i["probs"]!), id(a, i["dy"]!), a.attrs["scale"] as number)
      .map((r) => a.backend.out(r));
  },
};

const KERNELS: Record<string, Kernel> = {
  ...Object.fromEntries(UNARY.map((n) => [n, unary(n)])),
  ...Object.fromEntries(ARITHMETIC.map((n) => [n, binary(n, false)])),
  ...Object.fromEntries(COMPARISON.map((n) => [n, binary(n, true)])),
  ...Object.fromEntries(REDUCTIONS.map((n) => [n, reduction(n)])),
  Identity: (a) => a.backend.out(a.backend.addon.share(id(a, x(a)))),
  Cast: (a) => a.backend.out(a.backend.addon.cast(id(a, x(a)), dtypeCode(a.attrs["dtype"] as DataType))),
  AddN: (a) => a.backend.out(a.backend.addon.addN((Object.values(a.inputs) as TensorInfo[]).map((t) => id(a, t)))),
  ClipByValue: (a) => a.backend.out(a.backend.addon.clip(id(a, x(a)), a.attrs["clipValueMin"] as number, a.attrs["clipValueMax"] as number)),
  LeakyRelu: (a) => a.backend.out(a.backend.addon.leakyRelu(id(a, x(a)), a.attrs["alpha"] as number)),
  Step: (a) => a.backend.out(a.backend.addon.step(id(a, x(a)), a.attrs["alpha"] as number)),
  Select: (a) => a.backend.out(a.backend.addon.select(id(a, a.inputs["condition"]!), id(a, a.inputs["t"]!), id(a, a.inputs["e"]!))),
  Fill: (a) => a.backend.out(a.backend.addon.fill(a.attrs["shape"] as number[], a.attrs["value"] as number, dtypeCode(a.attrs["dtype"] as DataType))),
  ZerosLike: (a) => a.backend.out(a.backend.addon.fillLike(id(a, x(a)), 0, dtypeCode(x(a).dtype))),
  OnesLike: (a) => a.backend.out(a.backend.addon.fillLike(id(a, x(a)), 1, dtypeCode(x(a).dtype))),
  Range: range,
  OneHot: (a) => {
    const { depth, onValue, offValue, dtype } = a.attrs as unknown as { depth: number; onValue: number; offValue: number; dtype: DataType };
    return a.backend.out(a.backend.addon.oneHot(id(a, a.inputs["indices"]!), depth, onValue, offValue, dtypeCode(dtype)));
  },

  Reshape: (a) =>
    a.backend.out(a.backend.addon.reshape(id(a, x(a)), tf.util.inferFromImplicitShape(a.attrs["shape"] as number[], tf.util.sizeFromShape(x(a).shape)))),
  Transpose: (a) => a.backend.out(a.backend.addon.transpose(id(a, x(a)), a.attrs["perm"] as number[])),
  Slice: (a) => {
    const [begin, size] = tf.slice_util.parseSliceParams(x(a), a.attrs["begin"] as number[], a.attrs["size"] as number[]);
    return a.backend.out(a.backend.addon.slice(id(a, x(a)), begin!, size!));
  },
  StridedSlice: stridedSlice,
  Concat: (a) => {
    const parts = nonEmpty(a);
    const all = Object.values(a.inputs) as TensorInfo[];
    const axis = tf.util.parseAxisParam(a.attrs["axis"] as number, all[0]!.shape)[0]!;
    if (parts.length === 0)
      return a.backend.out(
        a.backend.addon.concat(
          all.map((t) => id(a, t)),
          axis,
        ),
      );
    return a.backend.out(
      a.backend.addon.concat(
        parts.map((t) => id(a, t)),
        axis,
      ),
    );
  },
  Pack: (a) => {
    const all = Object.values(a.inputs) as TensorInfo[];
    const axis = tf.util.parseAxisParam(a.attrs["axis"] as number, [...all[0]!.shape, 1])[0]!;
    return a.backend.out(
      a.backend.addon.stack(
        all.map((t) => id(a, t)),
        axis,
      ),
    );
  },
  Unpack: (a) => {
    const v = a.inputs["value"]!;
    return a.backend.addon.unstack(id(a, v), tf.util.parseAxisParam(a.attrs["axis"] as number, v.shape)[0]!).map((r) => a.backend.out(r));
  },
  SplitV: (a) => {
    const axis = tf.util.parseAxisParam(a.attrs["axis"] as number, x(a).shape)[0]!;
    const sizes = tf.backend_util.prepareSplitSize(x(a), a.attrs["numOrSizeSplits"] as number[] | number, axis);
    return a.backend.addon.splitV(id(a, x(a)), sizes, axis).map((r) => a.backend.out(r));
  },
  Tile: (a) => a.backend.out(a.backend.addon.tile(id(a, x(a)), a.attrs["reps"] as number[])),
  PadV2: (a) => a.backend.out(a.backend.addon.pad(id(a, x(a)), (a.attrs["paddings"] as [number, number][]).flat(), a.attrs["constantValue"] as number)),
  Reverse: (a) => a.backend.out(a.backend.addon.reverse(id(a, x(a)), axes(a.attrs["dims"], x(a).shape))),
  BroadcastTo: (a) => a.backend.out(a.backend.addon.broadcastTo(id(a, x(a)), a.attrs["shape"] as number[])),
  GatherV2: (a) => {
    const axis = tf.util.parseAxisParam(a.attrs["axis"] as number, x(a).shape)[0]!;
    return a.backend.out(a.backend.addon.gather(id(a, x(a)), id(a, a.inputs["indices"]!), axis, Number(a.attrs["batchDims"] ?? 0)));
  },
  GatherNd: (a) => a.backend.out(a.backend.addon.gatherNd(id(a, a.inputs["params"]!), id(a, a.inputs["indices"]!))),
  ScatterNd: (a) => a.backend.out(a.backend.addon.scatterNd(id(a, a.inputs["indices"]!), id(a, a.inputs["updates"]!), a.attrs["shape"] as number[])),
  UnsortedSegmentSum: (a) => a.backend.out(a.backend.addon.unsortedSegmentSum(id(a, x(a)), id(a, a.inputs["segmentIds"]!), a.attrs["numSegments"] as number)),

  ArgMax: (a) => a.backend.out(a.backend.addon.argExtreme(true, id(a, x(a)), axes(a.attrs["axis"], x(a).shape)[0]!)),
  ArgMin: (a) => a.backend.out(a.backend.addon.argExtreme(false, id(a, x(a)), axes(a.attrs["axis"], x(a).shape)[0]!)),
  Softmax: (a) => a.backend.out(a.backend.addon.softmax(id(a, a.inputs["logits"]!), a.attrs["dim"] as number)),
  Cumsum: (a) =>
    a.backend.out(a.backend.addon.cumulative(false, id(a, x(a)), a.attrs["axis"] as number, a.attrs["exclusive"] === true, a.attrs["reverse"] === true)),
  Cumprod: (a) =>
    a.backend.out(a.backend.addon.cumulative(true, id(a, x(a)), a.attrs["axis"] as number, a.attrs["exclusive"] === true, a.attrs["reverse"] === true)),
  TopK: (a) => a.backend.addon.topk(id(a, x(a)), a.attrs["k"] as number, a.attrs["sorted"] !== false).map((r) => a.backend.out(r)),

  BatchMatMul: matMul,
  _FusedMatMul: matMul,
  ...FUSED,
};

/** The kernel names the libtorch backend implements. */
export const LIBTORCH_KERNEL_NAMES: readonly string[] = Object.keys(KERNELS);

/** Registers every kernel for `backendName`. */
export function registerLibtorchKernels(backendName: string): void {
  for (const [kernelName, kernel] of Object.entries(KERNELS)) {
    tf.registerKernel({ kernelName, backendName, kernelFunc: kernel as unknown as KernelFunc });
  }
}
