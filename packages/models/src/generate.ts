import {
  computePrecision,
  guardHeap,
  LibtorchDecoder,
  libtorchSampleRows,
  NativeDecodeCache,
  nativeDecodeStep,
  nativeHeapOffsets,
  nativeSampleRows,
  tf,
  type DecodeDims,
  type RngStream,
} from "@pbrl/core-tensor";
import { positionsFromMask, windowedKeyMask } from "./attention-mask.js";
import { disposeCache, emptyCache, type CausalLM, type KVCache } from "./causal-lm.js";
import { checkContextLength } from "./context-length.js";
import { decodeKernelOrder } from "./fused-decode.js";
import { checkGeneration } from "./memory-check.js";
import { gatherRows } from "./ops.js";
import { chooseToken, validateSampling, type SamplingOptions } from "./sampling.js";

export interface GenerateOptions {
  maxNewTokens: number;
  /** Greedy decoding (default false: sample). */
  greedy?: boolean;
  temperature?: number;
  topP?: number;
  topK?: number;
  /** A row stops after emitting any of these (the token is kept in its output). */
  eosTokenIds?: readonly number[];
  /** Further ids that end a row, e.g. a chat template's end-of-turn token. */
  stopTokenIds?: readonly number[];
  /** Fills prompts on the left; required when prompts differ in length. */
  padTokenId?: number;
  /** Sequences sampled per prompt (default 1). */
  numReturnSequences?: number;
  /** Seeded stream for sampling; required unless greedy. */
  rng?: RngStream;
  /** Reuse keys and values of earlier positions (default true); false recomputes every step. */
  useCache?: boolean;
}

export interface GeneratedSequence {
  /** Index of the prompt this row answers. */
  promptIndex: number;
  /** New tokens, including the stop token when one ended the row. */
  tokens: number[];
  finishReason: "stop" | "length";
}

/**
 * Batched autoregressive generation: prompts are left-padded into one batch, decoded together
 * with a KV cache, positions counted from the padding mask as transformers does. A generation
 * longer than the model's context stops first with a ContextLengthError, and a batch the
 * backend's tensor memory cannot hold with a MemoryBudgetError (see memory-check.ts).
 */
export function generate(model: CausalLM, prompts: readonly (readonly number[])[], options: GenerateOptions): GeneratedSequence[] {
  const n = options.numReturnSequences ?? 1;
  // Invalid options are left to generateWith's own errors.
  if (Number.isInteger(n) && n >= 1 && Number.isInteger(options.maxNewTokens) && options.maxNewTokens > 0 && prompts.length > 0) {
    const promptLen = prompts.reduce((m, p) => Math.max(m, p.length), 0);
    // Before the memory check: a length beyond the context is the clearer cause of a huge estimate.
    checkContextLength(model.config, promptLen, options.maxNewTokens);
    checkGeneration(model.config, { rows: prompts.length * n, promptLen, maxNewTokens: options.maxNewTokens, useCache: options.useCache ?? true });
  }
  return guardHeap("generation", () => model.withFrozenWeights(() => generateWith(model, prompts, options)));
}

function generateWith(model: CausalLM, prompts: readonly (readonly number[])[], options: GenerateOptions): GeneratedSequence[] {
  const n = options.numReturnSequences ?? 1;
  const sampling: SamplingOptions = {
    greedy: options.greedy ?? false,
    temperature: options.temperature ?? 1,
    topK: options.topK ?? 0,
    topP: options.topP ?? 1,
  };
  validateSampling(sampling);
  if (!Number.isInteger(options.maxNewTokens) || options.maxNewTokens < 0)
    throw new RangeError(`max_new_tokens must be an integer ≥ 0, got ${options.maxNewTokens}`);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`num_return_sequences must be an integer ≥ 1, got ${n}`);
  if (prompts.some((p) => p.length === 0)) throw new RangeError("every prompt needs at least one token");
  if (!sampling.greedy && options.rng === undefined) throw new Error("sampling needs a seeded RngStream (pass rng, or use greedy decoding)");
  const stops = new Set([...(options.eosTokenIds ?? []), ...(options.stopTokenIds ?? [])]);
  const rows = prompts.flatMap((p, i) => Array.from({ length: n }, () => ({ prompt: p, promptIndex: i })));
  const b = rows.length;
  const out: GeneratedSequence[] = rows.map((r) => ({ promptIndex: r.promptIndex, tokens: [], finishReason: "length" }));
  if (b === 0 || options.maxNewTokens === 0) return out;

  const promptLen = Math.max(...rows.map((r) => r.prompt.length));
  const pad = options.padTokenId;
  if (pad === undefined && rows.some((r) => r.prompt.length !== promptLen)) {
    throw new RangeError("prompts differ in length: pass padTokenId so they can be left-padded");
  }
  // Host-side sequence state, [b, total] row-major, grown one column per step.
  let total = promptLen;
  let ids = new Int32Array(b * total);
  let mask = new Uint8Array(b * total);
  rows.forEach((r, i) => {
    const off = promptLen - r.prompt.length;
    ids.fill(pad ?? 0, i * total, i * total + off);
    ids.set(r.prompt, i * total + off);
    mask.fill(1, i * total + off, (i + 1) * total);
  });
  const done = new Uint8Array(b);
  const nextPos = Int32Array.from(rows, (r) => r.prompt.length);
  const useCache = options.useCache ?? true;
  const cache = useCache ? emptyCache() : undefined;
  const lastRows = Int32Array.from({ length: b }, (_, i) => i * promptLen + promptLen - 1);

  // On libtorch the logits stay where the model is (CPU or CUDA memory) and every row's token is
  // chosen there: only the chosen ids come back each step.
  const onDevice = tf.getBackend() === "libtorch";
  let deviceLogits: tf.Tensor2D | undefined;
  let decoder: LibtorchDecoder | undefined;
  /** The step's logits [b, vocab]: read back to the host, or kept on the device. */
  const stepLogits = (t: () => tf.Tensor2D): Float32Array => {
    if (!onDevice) return tf.tidy(() => t().dataSync() as Float32Array);
    deviceLogits?.dispose();
    deviceLogits = tf.tidy(t);
    return new Float32Array(0);
  };
  try {
    let logits = stepLogits(() => {
      const h = model.hidden({ ids, batch: b, length: total, positions: positionsFromMask(mask, b, total), keyMask: mask, ...(cache ? { cache } : {}) });
      return model.logits(gatherRows(h, lastRows));
    });
    const vocab = model.config.vocabSize;
    // Families the fused decoders implement (fused-decode.ts); the others decode with the
    // generic path below, which runs on every backend.
    const support = model.fusedDecodeSupport();
    const fusedWindow = support.ok ? support.window : undefined;
    // On the native backend the steps after the prompt run in one addon call each (see
    // nativeDecodeStep), from a copy of the prompt's keys and values.
    const fast =
      support.ok && cache !== undefined && tf.getBackend() === "native" ? nativeDecoder(model, cache, b, promptLen + options.maxNewTokens) : undefined;
    // On libtorch likewise, with the cache and the logits where the weights are (and the weights
    // read as bfloat16 copies when the backend computes in bf16).
    if (support.ok && cache !== undefined && onDevice) decoder = libtorchDecoder(model, cache, b, promptLen + options.maxNewTokens);
    // Plain sampling (no top-k, no top-p) of all rows in one addon call on native, with the same
    // uniform draws, in the same order, as chooseToken would take.
    const nativeSampling = tf.getBackend() === "native" && !sampling.greedy && sampling.topK === 0 && sampling.topP === 1 && options.rng !== undefined;
    for (let step = 0; step < options.maxNewTokens; step++) {
      const chosen = new Int32Array(b);
      const sampled = onDevice
        ? libtorchSampleRows(deviceLogits!, draws(done, sampling.greedy ? undefined : options.rng), sampling)
        : nativeSampling
          ? sampleOnNative(logits, done, options.rng!, sampling.temperature)
          : undefined;
      for (let i = 0; i < b; i++) {
        if (done[i]) {
          chosen[i] = pad ?? 0;
          continue;
        }
        const tok = sampled !== undefined ? sampled[i]! : chooseToken(logits.subarray(i * vocab, (i + 1) * vocab), sampling, options.rng);
        chosen[i] = tok;
        out[i]!.tokens.push(tok);
        if (stops.has(tok)) {
          done[i] = 1;
          out[i]!.finishReason = "stop";
        }
      }
      if (done.every((d) => d === 1) || step === options.maxNewTokens - 1) break;
      // Append the chosen column.
      const grownIds = new Int32Array(b * (total + 1));
      const grownMask = new Uint8Array(b * (total + 1));
      for (let i = 0; i < b; i++) {
        grownIds.set(ids.subarray(i * total, (i + 1) * total), i * (total + 1));
        grownIds[i * (total + 1) + total] = chosen[i]!;
        grownMask.set(mask.subarray(i * total, (i + 1) * total), i * (total + 1));
        grownMask[i * (total + 1) + total] = 1;
      }
      ids = grownIds;
      mask = grownMask;
      total += 1;
      if (decoder !== undefined) {
        const tables = model.rotaryTables(nextPos);
        deviceLogits?.dispose();
        deviceLogits = decoder.step(chosen, tables.cos, tables.sin, windowedKeyMask(mask, b, fusedWindow));
        for (let i = 0; i < b; i++) nextPos[i]! += 1;
        continue;
      }
      if (fast !== undefined) {
        const tables = model.rotaryTables(nextPos);
        logits = fast.logits;
        nativeDecodeStep(fast.weights, fast.cache, { ids: chosen, cos: tables.cos, sin: tables.sin, keyMask: windowedKeyMask(mask, b, fusedWindow) }, logits);
        for (let i = 0; i < b; i++) nextPos[i]! += 1;
        continue;
      }
      if (cache !== undefined && dropsCacheForLongRope(model, cache.length, total)) disposeCache(cache);
      logits = stepLogits(() => {
        if (cache !== undefined && cache.length > 0) {
          const h = model.hidden({ ids: chosen, batch: b, length: 1, positions: nextPos, keyMask: mask, cache });
          return model.logits(h);
        }
        const h = model.hidden({
          ids,
          batch: b,
          length: total,
          positions: positionsFromMask(mask, b, total),
          keyMask: mask,
          ...(cache !== undefined ? { cache } : {}),
        });
        return model.logits(
          gatherRows(
            h,
            Int32Array.from({ length: b }, (_, i) => i * total + total - 1),
          ),
        );
      });
      for (let i = 0; i < b; i++) nextPos[i]! += 1;
    }
  } finally {
    if (cache !== undefined) disposeCache(cache);
    deviceLogits?.dispose();
    decoder?.dispose();
  }
  return out;
}

/**
 * Phi-3's rule (transformers' Phi3ForCausalLM.prepare_inputs_for_generation): when the sequence,
 * padding included, first grows past original_max_position_embeddings, the keys cached with
 * longrope's short factors are dropped and the whole sequence is recomputed with the long ones,
 * so cached decoding gives what recomputing every step gives.
 */
function dropsCacheForLongRope(model: CausalLM, cached: number, total: number): boolean {
  const s = model.config.ropeScaling;
  return model.config.modelType === "phi3" && s.type === "longrope" && total > s.originalMaxPositionEmbeddings && cached <= s.originalMaxPositionEmbeddings;
}

/**
 * One uniform draw per row not yet done, in row order — the draws chooseToken would take — and −1
 * for done rows; no draws at all when `rng` is undefined (greedy).
 */
function draws(done: Uint8Array, rng: RngStream | undefined): Float64Array {
  const uniforms = new Float64Array(done.length);
  for (let i = 0; i < done.length; i++) uniforms[i] = done[i] ? -1 : rng === undefined ? 0 : rng.random();
  return uniforms;
}

function decodeDims(model: CausalLM): DecodeDims {
  const c = model.config;
  return {
    hidden: c.hiddenSize,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    intermediate: c.intermediateSize,
    vocab: c.vocabSize,
    layers: c.numLayers,
    rmsNormEps: c.rmsNormEps,
  };
}

/** The libtorch decoder after the prompt: the model's weights and the prompt's keys and values. */
function libtorchDecoder(model: CausalLM, cache: KVCache, batch: number, capacity: number): LibtorchDecoder {
  const decoder = new LibtorchDecoder(decodeKernelOrder(model.decodeWeights()), decodeDims(model), batch, capacity, computePrecision() === "bf16");
  cache.layers.forEach((l, i) => decoder.load(i, l.k, l.v, cache.length));
  return decoder;
}

/**
 * The native decoder's state after the prompt: where the weights it reads lie, the prompt's keys
 * and values, and the logits buffer every step overwrites (read by sampling before the next).
 */
function nativeDecoder(
  model: CausalLM,
  cache: KVCache,
  batch: number,
  capacity: number,
): { weights: Float64Array; cache: NativeDecodeCache; logits: Float32Array } {
  const c = model.config;
  const native = new NativeDecodeCache(decodeDims(model), batch, capacity);
  cache.layers.forEach((l, i) => native.load(i, l.k.dataSync() as Float32Array, l.v.dataSync() as Float32Array, cache.length));
  return { weights: nativeHeapOffsets(decodeKernelOrder(model.decodeWeights())), cache: native, logits: new Float32Array(batch * c.vocabSize) };
}

/** One token per row not yet done, drawn by the addon; done rows keep 0 and draw nothing. */
function sampleOnNative(logits: Float32Array, done: Uint8Array, rng: RngStream, temperature: number): Int32Array {
  const out = new Int32Array(done.length);
  nativeSampleRows(logits, draws(done, rng), temperature, out);
  return out;
}
