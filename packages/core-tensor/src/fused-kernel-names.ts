/**
 * The tfjs kernel names of pbrl's fused ops (src/fused-ops.ts). The native backend (native/kernels-fused.ts)
 * and the libtorch backend (libtorch/kernels.ts) each implement every one; both key their kernels by
 * {@link FusedKernelName}, so a name added here is a type error until both have it.
 */
export const PBRL_LOG_SOFTMAX_GRAD = "PbrlLogSoftmaxGrad";
export const PBRL_LOG_SOFTMAX_SELECT = "PbrlLogSoftmaxSelect";
export const PBRL_SCATTER_ADD_ROWS = "PbrlScatterAddRows";
export const PBRL_RMS_NORM = "PbrlRmsNorm";
export const PBRL_RMS_NORM_GRAD = "PbrlRmsNormGrad";
export const PBRL_SWIGLU = "PbrlSwiglu";
export const PBRL_SWIGLU_GRAD = "PbrlSwigluGrad";
export const PBRL_ROPE = "PbrlRope";
export const PBRL_ATTENTION = "PbrlAttention";
export const PBRL_ATTENTION_GRAD = "PbrlAttentionGrad";
export const PBRL_ADAMW = "PbrlAdamW";

const NAMES = [
  PBRL_LOG_SOFTMAX_GRAD,
  PBRL_LOG_SOFTMAX_SELECT,
  PBRL_SCATTER_ADD_ROWS,
  PBRL_RMS_NORM,
  PBRL_RMS_NORM_GRAD,
  PBRL_SWIGLU,
  PBRL_SWIGLU_GRAD,
  PBRL_ROPE,
  PBRL_ATTENTION,
  PBRL_ATTENTION_GRAD,
  PBRL_ADAMW,
] as const;

export type FusedKernelName = (typeof NAMES)[number];

/** Every fused kernel's name. */
export const FUSED_KERNEL_NAMES: readonly string[] = NAMES;

/**
 * The scalar attributes of {@link PBRL_ADAMW} (set by src/fused-ops.ts `adamwStep`), in the order
 * both addons' `adamw` take them after the tensors.
 */
export const ADAMW_ATTRS = ["decay", "b1", "c1", "b2", "c2", "bc2Sqrt", "eps", "stepSize"] as const;

export type AdamWAttrName = (typeof ADAMW_ATTRS)[number];

/** {@link ADAMW_ATTRS}'s values, in that order. */
export type AdamWAttrValues = [decay: number, b1: number, c1: number, b2: number, c2: number, bc2Sqrt: number, eps: number, stepSize: number];

/** The values of a {@link PBRL_ADAMW} kernel's scalar attributes, in the order the addons take them. */
export function adamwAttrValues(attrs: Readonly<Record<string, unknown>>): AdamWAttrValues {
  return ADAMW_ATTRS.map((name) => attrs[name] as number) as AdamWAttrValues;
}
