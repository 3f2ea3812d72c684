/**
 * What a causal LM's work needs in tensor memory, from its config and the workload alone (pure
 * functions: nothing is allocated). Every number is float32 bytes, because pbrl computes in
 * float32 whatever the checkpoint stores. docs/memory.md has the formulas and measurements.
 *
 * The activation terms count floats per token and layer, with coefficients fitted to real
 * training steps and generations (peak `tf.memory().numBytes` over a step's kernels, and the wasm
 * heap's high-water mark, in fresh processes) on 16 model shapes at 1 to 30 layers, from 1M
 * parameters to SmolLM2-135M's shape, then rounded up by about 5%. tfjs's ops (wasm, cpu) keep
 * about twice what pbrl's fused kernels (native, libtorch) keep, and tfjs's gradient tape frees
 * nothing until the backward pass ends. The optimizer step's temporaries are added to the backward peak, not
 * compared with it: the wasm allocator cannot reuse the activations' freed, scattered space for
 * them. How conservative, measured: a training step's estimate is 1.00–1.17× the wasm heap's
 * high-water mark and 1.03–1.29× the native one's (native shares data that tfjs counts twice);
 * generation 1.04–1.32× and scoring 1.02–1.09× the measured peak.
 */
import type { CausalLMConfig } from "./config.js";
import { fusedDecodeSupport } from "./fused-decode.js";
import { parameterSpecs } from "./parameters.js";

const F32 = 4;

/**
 * Whose kernels run the model: pbrl's fused ones on the wasm heap (native) or on ATen tensors
 * (libtorch: "aten"), or tfjs's ops (wasm, cpu, tensorflow).
 */
export type KernelFamily = "fused" | "aten" | "tfjs";

/** One line of a breakdown. Host items are JavaScript memory outside the backend's tensor memory. */
export interface MemoryItem {
  label: string;
  bytes: number;
  pool: "tensors" | "host";
}

export interface MemoryEstimate {
  items: MemoryItem[];
  /** Sum of the items held in the backend's tensor memory (the wasm heap on wasm and native). */
  tensorBytes: number;
  /** Sum of the host (JavaScript) items. */
  hostBytes: number;
}

/** Builds an estimate from its items, dropping empty ones. */
export function memoryEstimate(items: readonly MemoryItem[]): MemoryEstimate {
  const kept = items.filter((i) => i.bytes > 0);
  const sum = (pool: MemoryItem["pool"]) => kept.filter((i) => i.pool === pool).reduce((s, i) => s + i.bytes, 0);
  return { items: kept, tensorBytes: sum("tensors"), hostBytes: sum("host") };
}

/** Adds estimates item by item (phases or models that are alive at the same time). */
export function sumEstimates(parts: readonly MemoryEstimate[]): MemoryEstimate {
  return memoryEstimate(parts.flatMap((p) => p.items));
}

/** The sizes the estimates read, from the parameter list the model is built from. */
export interface ModelSizes {
  parameters: number;
  /** Parameters of one decoder layer's projections (q, k, v, o, gate, up, down). */
  layerProjections: number;
  /** The largest single parameter (the embedding, usually): the optimizer step's temporaries are multiples of it. */
  largestParameter: number;
}

export function modelSizes(config: CausalLMConfig): ModelSizes {
  let parameters = 0;
  let largest = 0;
  let layer0 = 0;
  for (const spec of parameterSpecs(config)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    parameters += n;
    largest = Math.max(largest, n);
    if (spec.kind === "linear" && spec.name.startsWith("model.layers.0.")) layer0 += n;
  }
  return { parameters, layerProjections: layer0, largestParameter: largest };
}

/** Floats a training step keeps per token and layer, per layer, and per logit, by kernel family (fitted, rounded up). */
const TRAINING = {
  tfjs: { hidden: 33, kv: 26, intermediate: 7.3, scores: 7.2, fixed: 5100, layerWeights: 3.6, lmHead: 0.3, logits: 6, optimizerTemps: 14 },
  fused: { hidden: 31.5, kv: 11, intermediate: 6.8, scores: 1.2, fixed: 800, layerWeights: 0.8, lmHead: 3.8, logits: 1.5, optimizerTemps: 3 },
  // The same kernels on ATen tensors, each freed the moment its last reference goes, where the wasm
  // heap's high-water mark above keeps every weight-sized temporary a step ever made: measured
  // against the peak RSS of whole madpo_iter rounds on libtorch (SmolLM2-135M and Qwen2.5-0.5B
  // shapes, full and LoRA; docs/memory.md), a step keeps two output-head-sized gradient
  // temporaries (a tied embedding's gradients from the lookup and the head, before they are summed)
  // and the in-place AdamW one copy of a parameter, and no per-layer weight temporaries; the
  // per-token terms are the fused kernels' rounded up by 20% (the blocks ATen's allocator and
  // glibc keep within a phase).
  aten: { hidden: 38, kv: 13.2, intermediate: 8.2, scores: 1.44, fixed: 960, layerWeights: 0, lmHead: 2, logits: 1.5, optimizerTemps: 1 },
} as const;

/**
 * Floats per token and unit of a LoRA module's input plus output width kept for the backward pass.
 * As tfjs ops: the dropped-out input and the low-rank update (2), rounded up by 20%. On libtorch one
 * fused kernel keeps only s·dropout(x)·Aᵀ, rank-wide (16 floats a token against 1450 of width on
 * average for SmolLM2-135M at r = 16: 0.011), and redraws the mask: 0.05 leaves room for r = 64.
 */
const ADAPTER_FLOATS_PER_WIDTH: Record<KernelFamily, number> = { tfjs: 2.4, fused: 2.4, aten: 0.05 };

/** The same for a forward pass without gradients (generation's prompt pass, scoring). */
const FORWARD = {
  tfjs: { hidden: 23, kv: 12, intermediate: 5.2, scores: 4.4, fixed: 900, logits: 3.1 },
  fused: { hidden: 13, kv: 7.5, intermediate: 3.2, scores: 0.5, fixed: 100, logits: 1.1 },
  aten: { hidden: 13, kv: 7.5, intermediate: 3.2, scores: 0.5, fixed: 100, logits: 1.1 },
} as const;

interface PerToken {
  hidden: number;
  kv: number;
  intermediate: number;
  scores: number;
  /** Per token and layer whatever the model's sizes: masks, norms' statistics, rotary tables, shape bookkeeping. */
  fixed: number;
}

/**
 * Floats per token per layer: the residual stream and projections, keys/values, the MLP, the
 * attention scores over `keys` positions, and what the family's departures from Llama add.
 */
function perTokenLayer(c: CausalLMConfig, k: PerToken, keys: number, kernels: KernelFamily, phase: "training" | "forward"): number {
  return (
    k.hidden * c.hiddenSize +
    k.kv * c.numKvHeads * c.headDim +
    k.intermediate * c.intermediateSize +
    scoresPerKey(c, k, keys, kernels, phase) * c.numHeads * keys +
    k.fixed +
    familyTerms(c, kernels, phase)
  );
}

/**
 * The scores coefficient, averaged over layers: on the fused kernels a sliding-window layer whose
 * window hides keys runs its multi-token passes as tfjs ops (attention.ts), which keep more — 2
 * floats per score more than on wasm, measured on native (transposing matmuls keep their inputs).
 */
function scoresPerKey(c: CausalLMConfig, k: PerToken, keys: number, kernels: KernelFamily, phase: "training" | "forward"): number {
  if (kernels === "tfjs") return k.scores;
  const tfjs = (phase === "training" ? TRAINING : FORWARD).tfjs.scores + 2;
  const sliding = c.layers.filter((l) => l.window !== undefined && keys > l.window).length;
  return (sliding * tfjs + (c.numLayers - sliding) * k.scores) / c.numLayers;
}

/**
 * Floats per token and layer that a family's departures from Llama add (families.ts). The
 * coefficients above were fitted on Llama-layout models; these are counted from the tensors the
 * extra ops keep for the backward pass (or hold at once in a forward pass), rounded up, and
 * checked against measured training steps (a 4-layer, hidden-256 model of each family on wasm and
 * native: each family's estimate exceeds the Llama-shaped one by more than its measured peak
 * does): query
 * heads wider than the hidden size (Qwen3, Gemma 3), q/k norms, Gemma's two extra norms and tanh
 * GELU (tfjs ops on every backend: about nine intermediate-sized tensors where the fused SwiGLU
 * keeps two), Phi-3's fused projections (the split copies) and partial rotary (slices and concat).
 */
function familyTerms(c: CausalLMConfig, kernels: KernelFamily, phase: "training" | "forward"): number {
  const a = c.arch;
  const h = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const i = c.intermediateSize;
  const train = phase === "training";
  const fused = kernels !== "tfjs";
  let floats = (train ? (fused ? 5 : 10) : 3) * Math.max(0, q - h);
  if (a.qkNorm) floats += (train ? (fused ? 2 : 4) : 2) * (q + kv);
  if (a.sandwichNorms) floats += (train ? (fused ? 4 : 8) : 2) * h;
  if (a.activation !== "silu") floats += (train ? (fused ? 10 : 6) : 3) * i;
  if (a.fusedProjections) floats += (train ? 2 : 1) * (q + 2 * kv + 2 * i);
  if (c.rotaryDim !== c.headDim) floats += (train ? 4 : 2) * (q + kv);
  return floats;
}

/** Floats per computed logit: the kernel family's, plus the soft-cap's tfjs ops (Gemma's final_logit_softcapping). */
function logitFloats(c: CausalLMConfig, perLogit: number): number {
  return perLogit + (c.arch.finalLogitSoftcap !== undefined ? 3 : 0);
}

/** A training step: one forward and backward pass over a batch, then an AdamW step. */
export interface TrainingStepWorkload {
  /** Sequences in the forward pass (MADPO: winners and losers, 2 per pair). */
  sequences: number;
  /** Tokens per sequence, padding included (prompt + completion). */
  seqLen: number;
  /** Positions whose logits are computed; default every position but the last of each sequence. */
  scoredTokens?: number;
  kernels: KernelFamily;
  /** gradient_checkpointing: each layer keeps only its input; one layer's activations live at a time, recomputed. */
  gradientCheckpointing?: boolean;
  /** The model's own weights do not train (a LoRA adapter's base): none of the weight-sized gradient temporaries. */
  frozenWeights?: boolean;
  /**
   * A LoRA adapter's modules in one layer, as the sum of their input and output widths: each keeps
   * its dropped-out input and its low-rank update for the backward pass.
   */
  adapterWidths?: number;
}

function checkCounts(what: string, values: Record<string, number>): void {
  for (const [k, v] of Object.entries(values)) if (!Number.isFinite(v) || v < 0) throw new RangeError(`${what}: ${k} must be a finite number ≥ 0, got ${v}`);
}

/**
 * The backward pass's peak above the weights, gradients and moments: every tensor the forward
 * pass saved for the gradients and every gradient computed (bytes).
 */
export function trainingActivationBytes(c: CausalLMConfig, w: TrainingStepWorkload): number {
  const scored = w.scoredTokens ?? w.sequences * Math.max(0, w.seqLen - 1);
  checkCounts("training step", { sequences: w.sequences, seqLen: w.seqLen, scoredTokens: scored });
  const k = TRAINING[w.kernels];
  const tokens = w.sequences * w.seqLen;
  const sizes = modelSizes(c);
  const perLayer = tokens * (perTokenLayer(c, k, w.seqLen, w.kernels, "training") + ADAPTER_FLOATS_PER_WIDTH[w.kernels] * (w.adapterWidths ?? 0));
  // Checkpointed: every layer's input [tokens, hidden] kept, and one layer's activations at a time.
  const layers = w.gradientCheckpointing === true ? c.numLayers * tokens * c.hiddenSize + perLayer : c.numLayers * perLayer;
  const weightTemporaries = w.frozenWeights === true ? 0 : k.layerWeights * c.numLayers * sizes.layerProjections + k.lmHead * c.vocabSize * c.hiddenSize;
  const floats = layers + weightTemporaries + logitFloats(c, k.logits) * scored * c.vocabSize;
  return floats * F32;
}

/** What an AdamW step makes beside the parameter it updates (largest: its largest trained parameter's size): tfjs's ops keep about 14 copies of it, the fused kernel 3. */
export function optimizerTemporaryBytes(kernels: KernelFamily, largest: number): number {
  return TRAINING[kernels].optimizerTemps * largest * F32;
}

/** The model's weights in tensor memory. */
export function weightsEstimate(c: CausalLMConfig, label = "weights"): MemoryEstimate {
  return memoryEstimate([{ label, bytes: modelSizes(c).parameters * F32, pool: "tensors" }]);
}

/**
 * One AdamW training step of a model, weights included: weights, gradients, both AdamW moments,
 * the backward pass's activations and the optimizer step's temporaries (tfjs ops keep about 14
 * copies of the parameter being updated, the fused kernel 3).
 */
export function trainingStepEstimate(c: CausalLMConfig, w: TrainingStepWorkload, label = ""): MemoryEstimate {
  const weights = modelSizes(c);
  const p = weights.parameters * F32;
  const at = label === "" ? "" : ` (${label})`;
  const activations = trainingActivationBytes(c, w);
  const optimizer = optimizerTemporaryBytes(w.kernels, weights.largestParameter);
  return memoryEstimate([
    { label: `weights${at}`, bytes: p, pool: "tensors" },
    { label: `gradients${at}`, bytes: p, pool: "tensors" },
    { label: `AdamW moments, 2 per weight${at}`, bytes: 2 * p, pool: "tensors" },
    { label: `activations of ${w.sequences} sequences × ${w.seqLen} tokens, forward and backward${at}`, bytes: activations, pool: "tensors" },
    { label: `optimizer-step temporaries${at}`, bytes: optimizer, pool: "tensors" },
    // Measured on the wasm heap with tfjs's ops: its high-water mark creeps up over the first
    // steps by up to 7% of these temporaries before it levels off (fragmentation); a 12-layer
    // 135M-shaped step the estimate without it let through died at step 7.
    { label: `heap fragmentation allowance${at}`, bytes: w.kernels === "tfjs" ? TFJS_FRAGMENTATION * (activations + optimizer) : 0, pool: "tensors" },
  ]);
}

/** Share of a training step's temporaries the tfjs ops' heap loses to fragmentation, rounded up from 7% measured. */
const TFJS_FRAGMENTATION = 0.1;

/** A forward pass without gradients over `sequences` × `seqLen` tokens, `logitRows` of whose logits are computed. */
export interface ForwardWorkload {
  sequences: number;
  seqLen: number;
  logitRows: number;
  kernels: KernelFamily;
}

/**
 * Scoring completions without gradients (the weights are not included). Its two phases follow
 * one another, so the larger counts: the layers' intermediates (freed when the last layer is
 * done) or the logits with the log-softmax's temporaries.
 */
export function forwardEstimate(c: CausalLMConfig, w: ForwardWorkload): MemoryEstimate {
  checkCounts("forward pass", { sequences: w.sequences, seqLen: w.seqLen, logitRows: w.logitRows });
  const k = FORWARD[w.kernels];
  const layers = w.sequences * w.seqLen * c.numLayers * perTokenLayer(c, k, w.seqLen, w.kernels, "forward") * F32;
  const logits = (logitFloats(c, k.logits) * w.logitRows * c.vocabSize + w.sequences * w.seqLen * c.hiddenSize) * F32;
  return memoryEstimate([
    layers >= logits
      ? { label: `forward pass over ${w.sequences} sequences × ${w.seqLen} tokens`, bytes: layers, pool: "tensors" }
      : { label: `logits of ${w.logitRows} positions × ${c.vocabSize} tokens and their log-softmax`, bytes: logits, pool: "tensors" },
  ]);
}

/** Batched generation: `rows` sequences (prompts × num_return_sequences), left-padded to `promptLen`. */
export interface GenerationWorkload {
  rows: number;
  /** Distinct prompts among the rows: each runs its prompt pass once, its keys and values then copied to its rows (generate.ts). */
  prompts: number;
  promptLen: number;
  maxNewTokens: number;
  kernels: KernelFamily;
  /** KV cache (default true); without it every step reruns the whole sequence. */
  useCache?: boolean;
  /** The native backend's decoder: after the prompt, the KV cache and logits live in host memory (for the families it runs, fused-decode.ts). */
  nativeDecode?: boolean;
}

/** Generation's memory beyond the weights: weight copies, the prompt's forward pass, the KV cache, the logits. */
export function generationEstimate(c: CausalLMConfig, w: GenerationWorkload): MemoryEstimate {
  checkCounts("generation", { rows: w.rows, prompts: w.prompts, promptLen: w.promptLen, maxNewTokens: w.maxNewTokens });
  if (w.prompts > w.rows) throw new RangeError(`generation estimate: ${w.prompts} prompts for ${w.rows} rows (each prompt has at least one row)`);
  const useCache = w.useCache ?? true;
  const k = FORWARD[w.kernels];
  const sizes = modelSizes(c);
  const total = w.promptLen + w.maxNewTokens;
  const nativeDecode = w.nativeDecode === true && fusedDecodeSupport(c).ok;
  // Without a cache the last step is the largest forward pass: every row's whole sequence; with
  // one, Phi-3's longrope recomputes the sequence once it first grows past the switch (generate.ts).
  const s = c.ropeScaling;
  const recompute =
    c.modelType === "phi3" && s.type === "longrope" && w.promptLen <= s.originalMaxPositionEmbeddings && total - 1 > s.originalMaxPositionEmbeddings
      ? s.originalMaxPositionEmbeddings + 1
      : 0;
  const passLen = useCache ? Math.max(w.promptLen, recompute) : Math.max(w.promptLen, total - 1);
  // The prompt pass runs once per prompt; later full passes (no cache, Phi-3's switch) run every row.
  const passRows = useCache && recompute === 0 ? w.prompts : w.rows;
  const kvPerRowPosition = 2 * c.numLayers * c.numKvHeads * c.headDim * F32;
  const kvPerPosition = kvPerRowPosition * w.rows;
  const items: MemoryItem[] = [
    {
      // CausalLM.withFrozenWeights: transposed copies of every projection and the output head.
      label: "transposed weight copies for decoding",
      bytes: w.kernels === "tfjs" ? (sizes.layerProjections * c.numLayers + c.vocabSize * c.hiddenSize) * F32 : 0,
      pool: "tensors",
    },
    {
      label: `forward pass over ${passRows} rows × ${passLen} tokens`,
      bytes: passRows * passLen * c.numLayers * perTokenLayer(c, k, passLen, w.kernels, "forward") * F32,
      pool: "tensors",
    },
  ];
  if (useCache && nativeDecode) {
    // The prompts' keys and values, and their copy to every row (one layer's prompt rows at a time, counted whole).
    items.push({
      label: `KV cache of the prompts (${w.prompts} rows, copied to ${w.rows} rows × ${w.promptLen} positions)`,
      bytes: kvPerRowPosition * w.promptLen * (w.rows + (w.prompts < w.rows ? w.prompts : 0)),
      pool: "tensors",
    });
    items.push({ label: `KV cache (${w.rows} rows × ${total} positions), host memory`, bytes: kvPerPosition * total, pool: "host" });
  } else if (useCache && w.kernels === "aten" && fusedDecodeSupport(c).ok) {
    // libtorch's decoder (generate.ts): it copies each prompt's keys and values once, beside the
    // prompt pass's until that is freed, and holds each row's own cache for the new tokens.
    items.push({
      label: `KV cache of the prompts (${w.prompts} rows × ${w.promptLen} positions, the prompt pass's and the decoder's copy)`,
      bytes: 2 * kvPerRowPosition * w.promptLen * w.prompts,
      pool: "tensors",
    });
    items.push({
      label: `KV cache of the new tokens (${w.rows} rows × ${w.maxNewTokens} positions)`,
      bytes: kvPerRowPosition * w.rows * w.maxNewTokens,
      pool: "tensors",
    });
  } else if (useCache) {
    // Each step concatenates the new position onto every layer's cache before freeing the old one.
    items.push({ label: `KV cache (${w.rows} rows × ${total} positions), old and new copy during a step`, bytes: 2 * kvPerPosition * total, pool: "tensors" });
  }
  items.push({ label: `logits (${w.rows} rows × ${c.vocabSize} tokens)`, bytes: 2 * w.rows * c.vocabSize * F32, pool: "tensors" });
  items.push({ label: "logits read back to JavaScript, host memory", bytes: w.rows * c.vocabSize * F32, pool: "host" });
  return memoryEstimate(items);
}
