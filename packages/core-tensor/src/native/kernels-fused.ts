/**
 * Kernels of pbrl's own fused ops (src/fused-ops.ts), registered for the native backend only;
 * on other backends those ops run as sequences of tfjs ops.
 */
import type { TensorInfo } from "@tensorflow/tfjs-core";
import * as kernel from "../fused-kernel-names.js";
import { heapOf, native, offsetOf, sizeOf, type KernelArgs } from "./heap.js";

const logSoftmaxGrad = (args: KernelArgs): TensorInfo => {
  const { inputs, backend } = args;
  const { x, lse, targets, dy } = inputs as Record<"x" | "lse" | "targets" | "dy", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const out = backend.makeOutput([rows, cols], "float32");
  if (rows * cols === 0) return out;
  native().logsoftmaxGrad(
    heapOf(backend),
    offsetOf(backend, x),
    offsetOf(backend, lse),
    offsetOf(backend, targets),
    offsetOf(backend, dy),
    offsetOf(backend, out),
    rows,
    cols,
  );
  return out;
};

const logSoftmaxSelect = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { x, targets } = inputs as Record<"x" | "targets", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const value = backend.makeOutput([rows], "float32");
  const lse = backend.makeOutput([rows, 1], "float32");
  if (rows > 0)
    native().logsoftmaxSelect(heapOf(backend), offsetOf(backend, x), offsetOf(backend, targets), offsetOf(backend, value), offsetOf(backend, lse), rows, cols);
  return [value, lse];
};

const scatterAddRows = (args: KernelArgs): TensorInfo => {
  const { inputs, backend, attrs } = args;
  const { dy, indices } = inputs as Record<"dy" | "indices", TensorInfo>;
  const [count, cols] = dy.shape as [number, number];
  const rows = attrs["rows"] as number;
  const out = backend.makeOutput([rows, cols], "float32");
  if (rows * cols > 0) native().scatterAddRows(heapOf(backend), offsetOf(backend, dy), offsetOf(backend, indices), offsetOf(backend, out), count, rows, cols);
  return out;
};

const rmsNorm = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { x, weight } = inputs as Record<"x" | "weight", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const y = backend.makeOutput([rows, cols], "float32");
  const rstd = backend.makeOutput([rows], "float32");
  if (rows * cols === 0) return [y, rstd];
  native().rmsnorm(
    heapOf(backend),
    offsetOf(backend, x),
    offsetOf(backend, weight),
    offsetOf(backend, y),
    offsetOf(backend, rstd),
    rows,
    cols,
    attrs["eps"] as number,
  );
  return [y, rstd];
};

const rmsNormGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { x, weight, rstd, dy } = inputs as Record<"x" | "weight" | "rstd" | "dy", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const dx = backend.makeOutput([rows, cols], "float32");
  const dw = backend.makeOutput([cols], "float32");
  const heap = heapOf(backend);
  if (rows === 0) new Float32Array(heap, offsetOf(backend, dw), cols).fill(0);
  else
    native().rmsnormGrad(
      heap,
      offsetOf(backend, x),
      offsetOf(backend, weight),
      offsetOf(backend, rstd),
      offsetOf(backend, dy),
      offsetOf(backend, dx),
      offsetOf(backend, dw),
      rows,
      cols,
    );
  return [dx, dw];
};

const swiglu = (args: KernelArgs): TensorInfo => {
  const { inputs, backend } = args;
  const { gate, up } = inputs as Record<"gate" | "up", TensorInfo>;
  const y = backend.makeOutput(gate.shape, "float32");
  const n = sizeOf(gate.shape);
  if (n > 0) native().swiglu(heapOf(backend), offsetOf(backend, gate), offsetOf(backend, up), offsetOf(backend, y), n);
  return y;
};

const swigluGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { gate, up, dy } = inputs as Record<"gate" | "up" | "dy", TensorInfo>;
  const dg = backend.makeOutput(gate.shape, "float32");
  const du = backend.makeOutput(gate.shape, "float32");
  const n = sizeOf(gate.shape);
  if (n > 0)
    native().swigluGrad(
      heapOf(backend),
      offsetOf(backend, gate),
      offsetOf(backend, up),
      offsetOf(backend, dy),
      offsetOf(backend, dg),
      offsetOf(backend, du),
      n,
    );
  return [dg, du];
};

const rope = (args: KernelArgs): TensorInfo => {
  const { inputs, backend, attrs } = args;
  const { x, cos, sin } = inputs as Record<"x" | "cos" | "sin", TensorInfo>;
  const [b, h, t, d] = x.shape as [number, number, number, number];
  const y = backend.makeOutput(x.shape, "float32");
  if (b * h * t * d > 0) {
    native().rope(
      heapOf(backend),
      offsetOf(backend, x),
      offsetOf(backend, cos),
      offsetOf(backend, sin),
      offsetOf(backend, y),
      b,
      h,
      t,
      d,
      attrs["backward"] === 1,
    );
  }
  return y;
};

/** [b, h, kv, t, s, d] of an attention call, from q [b, h, t, d] and k [b, kv, s, d]. */
function attentionDims(q: TensorInfo, k: TensorInfo): [number, number, number, number, number, number] {
  const [b, h, t, d] = q.shape as [number, number, number, number];
  return [b, h, k.shape[1]!, t, k.shape[2]!, d];
}

const attention = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { q, k, v, keyMask } = inputs as Record<"q" | "k" | "v" | "keyMask", TensorInfo>;
  const [b, h, kv, t, s, d] = attentionDims(q, k);
  const out = backend.makeOutput([b, t, h, d], "float32");
  const probs = backend.makeOutput([b, h, t, s], "float32");
  if (b * h * t * d > 0) {
    const o = (x: TensorInfo) => offsetOf(backend, x);
    native().attention(heapOf(backend), o(q), o(k), o(v), o(keyMask), o(out), o(probs), b, h, kv, t, s, d, attrs["scale"] as number);
  }
  return [out, probs];
};

const attentionGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { q, k, v, keyMask, probs, dy } = inputs as Record<"q" | "k" | "v" | "keyMask" | "probs" | "dy", TensorInfo>;
  const [b, h, kv, t, s, d] = attentionDims(q, k);
  const grads = [backend.makeOutput(q.shape, "float32"), backend.makeOutput(k.shape, "float32"), backend.makeOutput(v.shape, "float32")] as const;
  const o = (x: TensorInfo) => offsetOf(backend, x);
  if (b * kv * s * d > 0) {
    native().attentionGrad(
      heapOf(backend),
      o(q),
      o(k),
      o(v),
      o(keyMask),
      o(probs),
      o(dy),
      b,
      h,
      kv,
      t,
      s,
      d,
      attrs["scale"] as number,
      o(grads[0]),
      o(grads[1]),
      o(grads[2]),
    );
  }
  return [...grads];
};

const adamw = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { p, g, m, v } = inputs as Record<"p" | "g" | "m" | "v", TensorInfo>;
  const outs = [backend.makeOutput(p.shape, "float32"), backend.makeOutput(p.shape, "float32"), backend.makeOutput(p.shape, "float32")] as const;
  const n = sizeOf(p.shape);
  if (n > 0) {
    const o = (t: TensorInfo) => offsetOf(backend, t);
    native().adamw(heapOf(backend), o(p), o(g), o(m), o(v), o(outs[0]), o(outs[1]), o(outs[2]), n, ...kernel.adamwAttrValues(attrs));
  }
  return [...outs];
};

/** pbrl's own kernels (src/fused-ops.ts), by name: registered for the native backend only. */
export const FUSED_KERNELS: Record<kernel.FusedKernelName, (args: KernelArgs) => TensorInfo | TensorInfo[]> = {
  [kernel.PBRL_LOG_SOFTMAX_GRAD]: logSoftmaxGrad,
  [kernel.PBRL_LOG_SOFTMAX_SELECT]: logSoftmaxSelect,
  [kernel.PBRL_SCATTER_ADD_ROWS]: scatterAddRows,
  [kernel.PBRL_RMS_NORM]: rmsNorm,
  [kernel.PBRL_RMS_NORM_GRAD]: rmsNormGrad,
  [kernel.PBRL_SWIGLU]: swiglu,
  [kernel.PBRL_SWIGLU_GRAD]: swigluGrad,
  [kernel.PBRL_ROPE]: rope,
  [kernel.PBRL_ATTENTION]: attention,
  [kernel.PBRL_ATTENTION_GRAD]: attentionGrad,
  [kernel.PBRL_ADAMW]: adamw,
};
