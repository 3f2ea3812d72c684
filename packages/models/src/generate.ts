import {
  computePrecision,
  guardHeap,
  keepDecodeRows,
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
  /** Seeded stream for sampling, one uniform per live row per step in row order; required unless greedy or `rowRngs` is given. */
  rng?: RngStream;
  /**
   * One seeded stream per row (prompt-major: row i answers prompt ⌊i / n⌋), each row drawing only
   * from its own: a row then samples the same tokens whatever else is in the batch (other prompts,
   * their order, rows that stop), which one shared stream cannot give. Takes the place of `rng`.
   */
  rowRngs?: readonly RngStream[];
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
    checkGeneration(model.config, {
      rows: prompts.length * n,
      prompts: prompts.length,
      promptLen,
      maxNewTokens: options.maxNewTokens,
      useCache: options.useCache ?? true,
    });
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
  const b = prompts.length * n;
  const rowRngs = options.rowRngs;
  if (rowRngs !== undefined && rowRngs.length !== b)
    throw new RangeError(`rowRngs needs one stream per row: ${prompts.length} prompts × ${n} sequences = ${b}, got ${rowRngs.length}`);
  if (!sampling.greedy && options.rng === undefined && rowRngs === undefined)
    throw new Error("sampling needs a seeded RngStream (pass rng or rowRngs, or use greedy decoding)");
  /** The stream row `row` (an index into `out`) draws from; undefined when greedy. */
  const rngOf = (row: number): RngStream | undefined => (sampling.greedy ? undefined : (rowRngs?.[row] ?? options.rng));
  const stops = new Set([...(options.eosTokenIds ?? []), ...(options.stopTokenIds ?? [])]);
  // Rows are prompt-major: row i answers prompt ⌊i / n⌋.
  const out: GeneratedSequence[] = Array.from({ length: b }, (_, i) => ({ promptIndex: Math.floor(i / n), tokens: [], finishReason: "length" }));
  if (b === 0 || options.maxNewTokens === 0) return out;

  const promptLen = Math.max(...prompts.map((p) => p.length));
  const pad = options.padTokenId;
  if (pad === undefined && prompts.some((p) => p.length !== promptLen)) {
    throw new RangeError("prompts differ in length: pass padTokenId so they can be left-padded");
  }
  // Host-side sequence state of the live rows, [rows, total] row-major, grown one column per step;
  // first one row per prompt, for the prompt pass.
  let total = promptLen;
  let ids = new Int32Array(prompts.length * total);
  let mask = new Uint8Array(prompts.length * total);
  prompts.forEach((p, i) => {
    const off = promptLen - p.length;
    ids.fill(pad ?? 0, i * total, i * total + off);
    ids.set(p, i * total + off);
    mask.fill(1, i * total + off, (i + 1) * total);
  });
  /** The rows still generating (indices into `out`), in row order: only they compute and draw. */
  let live = Int32Array.from({ length: b }, (_, i) => i);
  const nextPos = Int32Array.from(live, (i) => prompts[Math.floor(i / n)]!.length);
  const useCache = options.useCache ?? true;
  const cache = useCache ? emptyCache() : undefined;
  const lastRows = Int32Array.from({ length: prompts.length }, (_, i) => i * promptLen + promptLen - 1);
  const promptOfRow = Int32Array.from(live, (i) => Math.floor(i / n));

  // On libtorch the logits stay where the model is (CPU or CUDA memory) and every row's token is
  // chosen there: only the chosen ids come back each step.
  const onDevice = tf.getBackend() === "libtorch";
  let deviceLogits: tf.Tensor2D | undefined;
  let decoder: LibtorchDecoder | undefined;
  /** The step's logits [rows, vocab]: read back to the host, or kept on the device. */
  const stepLogits = (t: () => tf.Tensor2D): Float32Array => {
    if (!onDevice) return tf.tidy(() => t().dataSync() as Float32Array);
    deviceLogits?.dispose();
    deviceLogits = tf.tidy(t);
    return new Float32Array(0);
  };
  try {
    // Each prompt runs once; its keys, values and last logits then serve all its n rows, copied
    // (the rows diverge from their first sampled token on).
    let logits = stepLogits(() => {
      const h = model.hidden({
        ids,
        batch: prompts.length,
        length: total,
        positions: positionsFromMask(mask, prompts.length, total),
        keyMask: mask,
        ...(cache ? { cache } : {}),
      });
      return tf.gather(model.logits(gatherRows(h, lastRows)), promptOfRow);
    });
    const vocab = model.config.vocabSize;
    // Families the fused decoders implement (fused-decode.ts); the others decode with the
    // generic path below, which runs on every backend.
    const support = model.fusedDecodeSupport();
    const fusedWindow = support.ok ? support.window : undefined;
    // On libtorch the steps after the prompt run in one addon call each, with the cache and the
    // logits where the weights are (and the weights read as bfloat16 copies when the backend
    // computes in bf16), each prompt's keys and values held once for all its rows.
    if (support.ok && cache !== undefined && onDevice) decoder = libtorchDecoder(model, cache, promptOfRow, promptLen + options.maxNewTokens);
    if (n > 1) {
      ids = selectRows(ids, total, promptOfRow);
      mask = selectRows(mask, total, promptOfRow);
      if (cache !== undefined && decoder === undefined) selectCacheRows(cache, promptOfRow);
    }
    // On the native backend likewise (see nativeDecodeStep), from a copy of the prompt's keys and
    // values for every row.
    const fast =
      support.ok && cache !== undefined && tf.getBackend() === "native" ? nativeDecoder(model, cache, b, promptLen + options.maxNewTokens) : undefined;
    // The decoders hold their own copy of the prompts' keys and values.
    if (cache !== undefined && (fast !== undefined || decoder !== undefined)) disposeCache(cache);
    // Plain sampling (no top-k, no top-p) of all rows in one addon call on native, with the same
    // uniform draws, in the same order, as chooseToken would take.
    const nativeSampling = tf.getBackend() === "native" && !sampling.greedy && sampling.topK === 0 && sampling.topP === 1;
    for (let step = 0; step < options.maxNewTokens; step++) {
      const rows = live.length;
      const chosen = new Int32Array(rows);
      const finished = new Uint8Array(rows);
      const sampled = onDevice
        ? libtorchSampleRows(deviceLogits!, draws(live, rngOf), sampling)
        : nativeSampling
          ? sampleOnNative(logits, draws(live, rngOf), sampling.temperature)
          : undefined;
      for (let i = 0; i < rows; i++) {
        const tok = sampled !== undefined ? sampled[i]! : chooseToken(logits.subarray(i * vocab, (i + 1) * vocab), sampling, rngOf(live[i]!));
        chosen[i] = tok;
        out[live[i]!]!.tokens.push(tok);
        if (stops.has(tok)) {
          finished[i] = 1;
          out[live[i]!]!.finishReason = "stop";
        }
      }
      if (finished.every((d) => d === 1) || step === options.maxNewTokens - 1) break;
      // Finished rows leave the batch: later steps compute and draw for the others only, in the
      // same order as before, so each row's draws are the ones it would take with them kept.
      const kept = keptRows(finished);
      if (kept !== undefined) {
        live = live.filter((_, i) => !finished[i]);
        ids = selectRows(ids, total, kept);
        mask = selectRows(mask, total, kept);
        nextPos.set(kept.map((i) => nextPos[i]!));
        if (decoder !== undefined) decoder.keep(kept);
        else if (fast !== undefined) keepDecodeRows(fast.cache, kept);
        else if (cache !== undefined && cache.length > 0) selectCacheRows(cache, kept);
      }
      const active = live.length;
      const next = kept === undefined ? chosen : kept.map((i) => chosen[i]!);
      const positions = nextPos.subarray(0, active);
      // Append the chosen column.
      const grownIds = new Int32Array(active * (total + 1));
      const grownMask = new Uint8Array(active * (total + 1));
      for (let i = 0; i < active; i++) {
        grownIds.set(ids.subarray(i * total, (i + 1) * total), i * (total + 1));
        grownIds[i * (total + 1) + total] = next[i]!;
        grownMask.set(mask.subarray(i * total, (i + 1) * total), i * (total + 1));
        grownMask[i * (total + 1) + total] = 1;
      }
      ids = grownIds;
      mask = grownMask;
      total += 1;
      if (decoder !== undefined) {
        const tables = model.rotaryTables(positions);
        deviceLogits?.dispose();
        deviceLogits = decoder.step(next, tables.cos, tables.sin, windowedKeyMask(mask, active, fusedWindow));
        for (let i = 0; i < active; i++) nextPos[i]! += 1;
        continue;
      }
      if (fast !== undefined) {
        const tables = model.rotaryTables(positions);
        logits = fast.logits.subarray(0, active * vocab);
        nativeDecodeStep(
          fast.weights,
          fast.cache,
          { ids: next, cos: tables.cos, sin: tables.sin, keyMask: windowedKeyMask(mask, active, fusedWindow) },
          logits,
        );
        for (let i = 0; i < active; i++) nextPos[i]! += 1;
        continue;
      }
      if (cache !== undefined && dropsCacheForLongRope(model, cache.length, total)) disposeCache(cache);
      logits = stepLogits(() => {
        if (cache !== undefined && cache.length > 0) {
          const h = model.hidden({ ids: next, batch: active, length: 1, positions, keyMask: mask, cache });
          return model.logits(h);
        }
        const h = model.hidden({
          ids,
          batch: active,
          length: total,
          positions: positionsFromMask(mask, active, total),
          keyMask: mask,
          ...(cache !== undefined ? { cache } : {}),
        });
        return model.logits(
          gatherRows(
            h,
            Int32Array.from({ length: active }, (_, i) => i * total + total - 1),
          ),
        );
      });
      for (let i = 0; i < active; i++) nextPos[i]! += 1;
    }
  } finally {
    if (cache !== undefined) disposeCache(cache);
    deviceLogits?.dispose();
    decoder?.dispose();
  }
  return out;
}

/** The indices of the rows not finished, or undefined when none finished. */
function keptRows(finished: Uint8Array): Int32Array | undefined {
  if (!finished.includes(1)) return undefined;
  const kept: number[] = [];
  finished.forEach((f, i) => {
    if (!f) kept.push(i);
  });
  return Int32Array.from(kept);
}

/** Rows `rows` of a row-major [*, width] array, in that order (a row may repeat). */
function selectRows<T extends Int32Array | Uint8Array>(a: T, width: number, rows: Int32Array): T {
  const picked = new (a.constructor as new (length: number) => T)(rows.length * width);
  rows.forEach((r, i) => picked.set(a.subarray(r * width, (r + 1) * width), i * width));
  return picked;
}

/** The cache's rows `rows`, in that order (a row may repeat), replacing every layer's tensors. */
function selectCacheRows(cache: KVCache, rows: Int32Array): void {
  cache.layers = cache.layers.map((l) => {
    const picked = tf.tidy(() => ({ k: tf.gather(l.k, rows, 0), v: tf.gather(l.v, rows, 0) }));
    l.k.dispose();
    l.v.dispose();
    return picked;
  });
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

/** One uniform draw per live row, in row order, each from its row's stream — the draws chooseToken would take; none when greedy (no stream). */
function draws(live: Int32Array, rngOf: (row: number) => RngStream | undefined): Float64Array {
  const uniforms = new Float64Array(live.length);
  for (let i = 0; i < live.length; i++) {
    const rng = rngOf(live[i]!);
    if (rng !== undefined) uniforms[i] = rng.random();
  }
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

/** The libtorch decoder after the prompt: the model's weights and the prompts' keys and values (one cache row per prompt). */
function libtorchDecoder(model: CausalLM, cache: KVCache, promptOfRow: Int32Array, capacity: number): LibtorchDecoder {
  const decoder = new LibtorchDecoder(decodeKernelOrder(model.decodeWeights()), decodeDims(model), promptOfRow, capacity, computePrecision() === "bf16");
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

/** One token per live row, drawn by the addon from the rows' uniforms. */
function sampleOnNative(logits: Float32Array, uniforms: Float64Array, temperature: number): Int32Array {
  const out = new Int32Array(uniforms.length);
  nativeSampleRows(logits, uniforms, temperature, out);
  return out;
}
