/**
 * Compares a memory estimate with what the active backend can hold and stops, before anything is
 * allocated, with a {@link MemoryBudgetError} that gives the numbers and what to do. Backends
 * without a limit (cpu, tensorflow, libtorch) always pass.
 */
import { formatBytes, fusedKernelsActive, memoryCapacity, MemoryBudgetError, tf } from "@pbrl/core-tensor";
import type { CausalLMConfig } from "./config.js";
import {
  generationEstimate,
  modelSizes,
  trainingStepEstimate,
  type GenerationWorkload,
  type KernelFamily,
  type MemoryEstimate,
  type TrainingStepWorkload,
} from "./memory-estimate.js";

/** The kernel family of the active backend, for the estimates. */
export function activeKernelFamily(): KernelFamily {
  if (!fusedKernelsActive()) return "tfjs";
  return tf.getBackend() === "libtorch" ? "aten" : "fused";
}

/** The way out every memory message ends with, after the workload's own advice. */
export const UNLIMITED_BACKEND_ADVICE =
  "or a backend without the 4 GB heap limit: backend=libtorch (ATen tensors in host or CUDA memory; docs/libtorch-backend.md says how to get it) or backend=cpu (pure JavaScript, much slower)";

export interface MemoryCheck {
  /** The work, as the message's subject: "generating 64 tokens for 100000 rows". */
  what: string;
  /** What to do instead, without the backend advice (added): "generate fewer rows at once". */
  advice: string;
  /** Bytes of the estimate that are already allocated (a loaded model's weights): not needed again. */
  alreadyLiveBytes?: number;
}

/** The estimate's items, one per line, for messages. */
export function describeEstimate(e: MemoryEstimate): string {
  const width = Math.max(...e.items.map((i) => i.label.length));
  return e.items.map((i) => `  ${i.label.padEnd(width)}  ${formatBytes(i.bytes).padStart(9)}`).join("\n");
}

/** The lines a model is described by in messages: "llama, 134.5M parameters, 30 layers". */
export function describeModel(c: CausalLMConfig): string {
  return `${c.modelType}, ${(modelSizes(c).parameters / 1e6).toFixed(1)}M parameters, ${c.numLayers} layers, hidden ${c.hiddenSize}, vocabulary ${c.vocabSize}`;
}

/**
 * Throws {@link MemoryBudgetError} when the estimate's tensor memory (less what is already live)
 * exceeds what the active backend has left.
 */
export function checkMemory(estimate: MemoryEstimate, check: MemoryCheck): void {
  const cap = memoryCapacity();
  if (cap.limitBytes === undefined) return;
  const already = Math.min(check.alreadyLiveBytes ?? 0, cap.usedBytes);
  const needed = estimate.tensorBytes - already;
  if (needed <= cap.availableBytes) return;
  const inUse = cap.usedBytes - already;
  const held = inUse > 0 ? `, and other live tensors take ${formatBytes(inUse)} of it` : "";
  const host = estimate.hostBytes > 0 ? " (host-memory lines are not in the total)" : "";
  throw new MemoryBudgetError(
    `${check.what} needs about ${formatBytes(estimate.tensorBytes)} of tensor memory, more than the ${cap.backend} backend can hold: ` +
      `${cap.why}${held}. Estimated need${host}:\n` +
      `${describeEstimate(estimate)}\n` +
      `What to do: ${check.advice}, ${cap.backend === "native" || cap.backend === "wasm" ? UNLIMITED_BACKEND_ADVICE : "or a machine with more memory"}. See docs/memory.md.`,
    { neededBytes: needed, availableBytes: cap.availableBytes, backend: cap.backend, afterCrash: false },
  );
}

/** What to do about a training step that does not fit. */
export const TRAINING_ADVICE =
  "train on smaller batches (train_batch_size: each MADPO pair is two sequences) or shorter sequences (max_new_tokens, shorter prompts), or a smaller model";

/**
 * Stops before a training step of a `config` model on `sequences` × `seqLen` tokens that the
 * active backend cannot hold (weights, gradients, AdamW moments, activations). `alreadyLiveBytes`:
 * what of it is allocated already, e.g. the model's weights once it is loaded.
 */
export function checkTrainingStep(
  config: CausalLMConfig,
  workload: Omit<TrainingStepWorkload, "kernels">,
  options: { alreadyLiveBytes?: number; advice?: string } = {},
): void {
  const w: TrainingStepWorkload = { ...workload, kernels: activeKernelFamily() };
  checkMemory(trainingStepEstimate(config, w), {
    what: `a training step of this model (${describeModel(config)}) on ${w.sequences} sequences × ${w.seqLen} tokens`,
    advice: options.advice ?? TRAINING_ADVICE,
    ...(options.alreadyLiveBytes !== undefined ? { alreadyLiveBytes: options.alreadyLiveBytes } : {}),
  });
}

/** What to do about a generation that does not fit. */
export const GENERATION_ADVICE =
  "generate fewer rows at once (fewer prompts or num_return_sequences per call; generation_batch_size in a trainer's config), fewer max_new_tokens or shorter prompts";

/** Stops before a generation the active backend cannot hold (the model's weights are live already). */
export function checkGeneration(config: CausalLMConfig, workload: Omit<GenerationWorkload, "kernels" | "nativeDecode">): void {
  const w: GenerationWorkload = { ...workload, kernels: activeKernelFamily(), nativeDecode: (workload.useCache ?? true) && tf.getBackend() === "native" };
  checkMemory(generationEstimate(config, w), {
    what: `generating ${w.maxNewTokens} tokens for ${w.rows} rows after a ${w.promptLen}-token prompt with this model (${describeModel(config)})`,
    advice: GENERATION_ADVICE,
  });
}
