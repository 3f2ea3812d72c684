/**
 * The tfjs kernels that the native backend runs in the addon instead of wasm's. Each gets the wasm
 * kernel it replaces, for the inputs it leaves to it.
 */
import type { DataType, KernelFunc, TensorInfo } from "@tensorflow/tfjs-core";
import { tf } from "../tf.js";
import { heapOf, native, offsetOf, sizeOf, type KernelArgs, type WasmHeapBackend } from "./heap.js";

type NativeKernel = (args: KernelArgs, wasmKernel: KernelFunc) => TensorInfo | TensorInfo[];

/** Output batch → input batch index, for batch shapes that broadcast other than by 1 or equality. */
function broadcastIndex(outer: number[], inputOuter: number[]): Int32Array {
  const lead = outer.length - inputOuter.length;
  const strides: number[] = new Array<number>(outer.length).fill(0);
  let s = 1;
  for (let i = inputOuter.length - 1; i >= 0; i--) {
    if (inputOuter[i] !== 1) strides[i + lead] = s;
    s *= inputOuter[i]!;
  }
  const total = sizeOf(outer);
  const idx = new Int32Array(total);
  const pos = new Array<number>(outer.length).fill(0);
  for (let o = 0; o < total; o++) {
    let v = 0;
    for (let i = 0; i < outer.length; i++) v += pos[i]! * strides[i]!;
    idx[o] = v;
    for (let i = outer.length - 1; i >= 0; i--) {
      if (++pos[i]! < outer[i]!) break;
      pos[i] = 0;
    }
  }
  return idx;
}

const ACTIVATIONS: Record<string, number> = { linear: 0, relu: 1, relu6: 2, leakyrelu: 4, sigmoid: 5, elu: 6 };

function matMulKernel(args: KernelArgs, bias?: TensorInfo, activation = 0, alpha = 0): TensorInfo {
  const { inputs, backend, attrs } = args;
  const a = inputs["a"]!;
  const b = inputs["b"]!;
  const transposeA = attrs["transposeA"] === true;
  const transposeB = attrs["transposeB"] === true;
  const ar = a.shape.length;
  const br = b.shape.length;
  const innerA = transposeA ? a.shape[ar - 2]! : a.shape[ar - 1]!;
  const innerB = transposeB ? b.shape[br - 1]! : b.shape[br - 2]!;
  const m = transposeA ? a.shape[ar - 1]! : a.shape[ar - 2]!;
  const n = transposeB ? b.shape[br - 2]! : b.shape[br - 1]!;
  tf.util.assert(
    innerA === innerB,
    () =>
      `Error in matMul: inner shapes (${innerA}) and (${innerB}) of Tensors with shapes ${a.shape} and ` +
      `${b.shape} and transposeA=${transposeA} and transposeB=${transposeB} must match.`,
  );
  const outerA = a.shape.slice(0, -2);
  const outerB = b.shape.slice(0, -2);
  const outer = tf.broadcast_util.assertAndGetBroadcastShape(outerA, outerB);
  const batch = sizeOf(outer);
  const batchA = sizeOf(outerA);
  const batchB = sizeOf(outerB);
  const aIndex = batchA === 1 || batchA === batch ? null : broadcastIndex(outer, outerA);
  const bIndex = batchB === 1 || batchB === batch ? null : broadcastIndex(outer, outerB);
  const out = backend.makeOutput([...outer, m, n], "float32");
  if (batch === 0 || m === 0 || n === 0) return out;
  native().matmul(
    heapOf(backend),
    offsetOf(backend, a),
    offsetOf(backend, b),
    offsetOf(backend, out),
    batch,
    m,
    n,
    innerA,
    transposeA,
    transposeB,
    batchA,
    batchB,
    aIndex,
    bIndex,
    bias === undefined ? -1 : offsetOf(backend, bias),
    bias === undefined ? 0 : sizeOf(bias.shape),
    activation,
    alpha,
  );
  return out;
}

const batchMatMul: NativeKernel = (args, wasmKernel) => {
  const { a, b } = args.inputs;
  if (a!.dtype !== "float32" || b!.dtype !== "float32") return wasmKernel(args as never);
  return matMulKernel(args);
};

const fusedMatMul: NativeKernel = (args, wasmKernel) => {
  const { a, b, bias, preluActivationWeights } = args.inputs;
  const activation = ACTIVATIONS[String(args.attrs["activation"] ?? "linear")];
  const bt = args.attrs["transposeB"] === true;
  const n = bt ? b!.shape[b!.shape.length - 2]! : b!.shape[b!.shape.length - 1]!;
  const biasOk = bias === undefined || (bias.dtype === "float32" && bias.shape.length === 1 && (bias.shape[0] === n || bias.shape[0] === 1));
  if (a!.dtype !== "float32" || b!.dtype !== "float32" || activation === undefined || preluActivationWeights !== undefined || !biasOk) {
    return wasmKernel(args as never);
  }
  const alpha = Number(args.attrs["leakyreluAlpha"] ?? 0); // as the wasm kernel: unset means 0
  return matMulKernel(args, bias, activation, alpha);
};

const transpose: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const perm = attrs["perm"] as number[];
  if ((x.dtype !== "float32" && x.dtype !== "int32") || perm.every((p, i) => p === i || x.shape[p] === 1)) {
    return wasmKernel(args as never); // other dtypes; and (almost) identity permutations, which wasm does without a copy
  }
  const out = backend.makeOutput(
    perm.map((p) => x.shape[p]!),
    x.dtype,
  );
  if (sizeOf(x.shape) === 0) return out;
  native().transpose(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), Int32Array.from(x.shape), Int32Array.from(perm));
  return out;
};

/** Unary float32 → float32 kernels; ops numbered as in native/src/elementwise.cc. */
function unary(op: number): NativeKernel {
  return (args, wasmKernel) => {
    const { inputs, backend } = args;
    const x = inputs["x"]!;
    if (x.dtype !== "float32") return wasmKernel(args as never);
    const out = backend.makeOutput(x.shape.slice(), "float32");
    const size = sizeOf(x.shape);
    if (size > 0) native().unary(heapOf(backend), op, offsetOf(backend, x), offsetOf(backend, out), size);
    return out;
  };
}

/** Bytes per element of the dtypes the copy kernels move; undefined for strings. */
function elementBytes(dtype: DataType): number | undefined {
  return dtype === "float32" || dtype === "int32" ? 4 : dtype === "bool" ? 1 : undefined;
}

/**
 * A slice as one strided row copy, when it cuts a single axis `a` (every other axis whole):
 * rows = the product of the axes before `a`, each row a contiguous run. undefined otherwise.
 */
function sliceAs2D(
  shape: readonly number[],
  begin: readonly number[],
  size: readonly number[],
): { rows: number; srcRow: number; dstRow: number; offset: number } | undefined {
  if (shape.length === 0) return undefined;
  let cut = -1;
  for (let i = 0; i < shape.length; i++) {
    if (begin[i] === 0 && size[i] === shape[i]) continue;
    if (cut !== -1) return undefined;
    cut = i;
  }
  if (cut === -1) cut = 0; // the whole tensor: one row
  const inner = sizeOf(shape.slice(cut + 1));
  return { rows: sizeOf(shape.slice(0, cut)), srcRow: shape[cut]! * inner, dstRow: size[cut]! * inner, offset: begin[cut]! * inner };
}

/** Slices `x` natively into a new output, or returns undefined for the wasm kernel to do. */
function sliceNative(backend: WasmHeapBackend, x: TensorInfo, begin: number[], size: number[]): TensorInfo | undefined {
  const bytes = elementBytes(x.dtype);
  const plan = sliceAs2D(x.shape, begin, size);
  if (bytes === undefined || plan === undefined) return undefined;
  const out = backend.makeOutput(size.slice(), x.dtype);
  if (plan.rows * plan.dstRow === 0) return out;
  native().copy2d(
    heapOf(backend),
    offsetOf(backend, x) + plan.offset * bytes,
    plan.srcRow * bytes,
    offsetOf(backend, out),
    plan.dstRow * bytes,
    plan.rows,
    plan.dstRow * bytes,
  );
  return out;
}

// tfjs's wasm Slice, SplitV and Concat copy element by element in JavaScript (except whole
// contiguous ranges): ~5 ms for half of a [8, 4, 128, 64] tensor, as rotary embeddings take it.
const slice: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const [begin, size] = tf.slice_util.parseSliceParams(x as never, attrs["begin"] as number[], attrs["size"] as number[]);
  return sliceNative(backend, x, begin!, size!) ?? wasmKernel(args as never);
};

const splitV: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, x.shape)[0]!;
  if (elementBytes(x.dtype) === undefined) return wasmKernel(args as never);
  const sizes = tf.backend_util.prepareSplitSize(x as never, attrs["numOrSizeSplits"] as number[] | number, axis);
  const begin = new Array<number>(x.shape.length).fill(0);
  return sizes.map((s) => {
    const size = x.shape.slice();
    size[axis] = s;
    const part = sliceNative(backend, x, begin.slice(), size)!; // one cut axis: always a 2-D copy
    begin[axis]! += s;
    return part;
  });
};

const concat: NativeKernel = (args, wasmKernel) => {
  const { backend, attrs } = args;
  const inputs = Object.values(args.inputs) as TensorInfo[];
  const first = inputs[0]!;
  const bytes = elementBytes(first.dtype);
  if (bytes === undefined || inputs.some((t) => t.dtype !== first.dtype)) return wasmKernel(args as never);
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, first.shape)[0]!;
  tf.backend_util.assertParamsConsistent(
    inputs.map((t) => t.shape),
    axis,
  );
  const outShape = tf.backend_util.computeOutShape(
    inputs.map((t) => t.shape),
    axis,
  );
  const out = backend.makeOutput(outShape, first.dtype);
  const rows = sizeOf(outShape.slice(0, axis));
  const outRow = sizeOf(outShape.slice(axis));
  if (rows * outRow === 0) return out;
  // Each input is a [rows, inner] block copied into columns [at, at + inner) of the output rows.
  let at = 0;
  for (const t of inputs) {
    const inner = sizeOf(t.shape.slice(axis));
    if (inner > 0)
      native().copy2d(heapOf(backend), offsetOf(backend, t), inner * bytes, offsetOf(backend, out) + at * bytes, outRow * bytes, rows, inner * bytes);
    at += inner;
  }
  return out;
};

// float32 Sum over leading axes (column sums: bias and norm-weight gradients) or trailing axes
// (row sums); wasm first transposes the reduced axes innermost, then sums single-threaded.
const sum: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  if (x.dtype !== "float32") return wasmKernel(args as never);
  const r = x.shape.length;
  const axes = tf.util
    .parseAxisParam(attrs["axis"] as number | number[], x.shape)
    .slice()
    .sort((p, q) => p - q);
  if (new Set(axes).size !== axes.length) return wasmKernel(args as never);
  const k = axes.length;
  const leading = axes.every((a, i) => a === i);
  const trailing = axes.every((a, i) => a === r - k + i);
  if (k === 0 || (!leading && !trailing)) return wasmKernel(args as never);
  const kept = x.shape.filter((_, i) => !axes.includes(i));
  const outShape = attrs["keepDims"] === true ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : kept;
  const out = backend.makeOutput(outShape, "float32");
  const reduced = sizeOf(axes.map((a) => x.shape[a]!));
  const keptSize = sizeOf(kept);
  if (keptSize === 0) return out;
  // leading: x is [reduced, kept], sum over its rows; trailing: [kept, reduced], within each row.
  if (leading) native().sum(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), reduced, keptSize, true);
  else native().sum(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), keptSize, reduced, false);
  return out;
};

// tfjs saves every tensor a gradient needs through an Identity kernel, which wasm implements as a
// copy: ~280 copies (~24 ms, and the memory) per training step of the bench model. Tensors are
// immutable and the wasm heap is reference-counted (Reshape shares data the same way), so the
// output shares its input's data, as on the cpu backend.
const identity: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend } = args;
  const x = inputs["x"]!;
  if (x.dtype === "string") return wasmKernel(args as never);
  backend.incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape.slice(), dtype: x.dtype };
};

// GatherV2 with batchDims 0 as row copies (an embedding lookup, picking hidden states).
const gatherV2: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const indices = inputs["indices"]!;
  const bytes = elementBytes(x.dtype);
  if (bytes === undefined || indices.dtype !== "int32" || Number(attrs["batchDims"] ?? 0) !== 0) return wasmKernel(args as never);
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, x.shape)[0]!;
  const count = sizeOf(indices.shape);
  const out = backend.makeOutput([...x.shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)], x.dtype);
  const outer = sizeOf(x.shape.slice(0, axis));
  const innerBytes = sizeOf(x.shape.slice(axis + 1)) * bytes;
  if (outer * count * innerBytes === 0) return out;
  native().gather(heapOf(backend), offsetOf(backend, x), offsetOf(backend, indices), offsetOf(backend, out), outer, x.shape[axis]!, count, innerBytes);
  return out;
};

/** The kernels that run in the addon on the native backend; every other kernel is wasm's. */
export const NATIVE_KERNELS: Readonly<Record<string, NativeKernel>> = {
  BatchMatMul: batchMatMul,
  _FusedMatMul: fusedMatMul,
  Transpose: transpose,
  Identity: identity,
  GatherV2: gatherV2,
  Slice: slice,
  SplitV: splitV,
  Concat: concat,
  Sum: sum,
  Exp: unary(0),
  Sigmoid: unary(1),
  Sqrt: unary(4),
  Rsqrt: unary(5),
  Reciprocal: unary(7),
};
