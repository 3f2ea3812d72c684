import * as path from "node:path";
import { deviceOf, onDevice, replaceDirAtomic, tf } from "@pbrl/core-tensor";
import type { CausalLM } from "./causal-lm.js";
import { savePretrained } from "./checkpoint.js";
import type { GenerationDefaults } from "./generation-config.js";
import { ScalarHead } from "./heads.js";
import { gatherRows } from "./ops.js";
import { padRows, realLengths, type PaddedBatch, type PaddingSide } from "./padded-rows.js";
import type { Tokenizer } from "./tokenizer.js";

/**
 * The id written into padding positions (never attended to, never read): the tokenizer's pad id,
 * else the backbone's, else EOS, else 0.
 */
export function defaultPadTokenId(tokenizer: Tokenizer, backbone: CausalLM): number {
  const c = backbone.config;
  return tokenizer.padTokenId ?? c.padTokenId ?? tokenizer.eosTokenId ?? c.eosTokenIds[0] ?? 0;
}

/**
 * `head` on `device`: itself when it is there, else a copy (a few floats, through host memory)
 * and `head` is freed. `what` names the head in errors.
 */
export function headOn(head: ScalarHead, device: string, what: string): ScalarHead {
  if (deviceOf(head.params.values().next().value!) === device) return head;
  try {
    return onDevice(device, () => ScalarHead.fromHostWeights(head.options, head.hostWeights(), what));
  } finally {
    head.dispose();
  }
}

/** Maps gradients of a backbone + head to weight names (Hugging Face names for the backbone, `<prefix>.*` for the head). */
export function splitGrads(backbone: CausalLM, head: ScalarHead, grads: tf.NamedTensorMap): { backbone: Map<string, tf.Tensor>; head: Map<string, tf.Tensor> } {
  const headNames = new Set(head.trainableVariables().map((v) => v.name));
  const b: tf.NamedTensorMap = {};
  const h: tf.NamedTensorMap = {};
  for (const [k, g] of Object.entries(grads)) (headNames.has(k) ? h : b)[k] = g;
  return { backbone: backbone.gradsByWeightName(b), head: head.gradsByWeightName(h) };
}

/**
 * A causal LM plus a scalar head: the backbone reads token rows and a `ScalarHead` maps the final
 * hidden state (after the last norm) at each row's last real token to one number per sequence —
 * the critics' value, the reward model's score. The last real token is found from the attention
 * mask, so left and right padding give the same numbers, and rotary positions are counted over
 * real tokens only, so a padded row scores as it does alone.
 *
 * On disk: the backbone as a Hugging Face checkpoint folder, the head as one safetensors file in
 * it (the subclass names it).
 */
export class ScalarHeadModel {
  /** The id written into padding positions (never attended to, never read). */
  readonly padTokenId: number;
  private disposed = false;

  protected constructor(
    readonly backbone: CausalLM,
    readonly head: ScalarHead,
    readonly tokenizer: Tokenizer,
    padTokenId?: number,
  ) {
    this.padTokenId = padTokenId ?? defaultPadTokenId(tokenizer, backbone);
  }

  /**
   * Writes the backbone as a Hugging Face checkpoint folder plus the head as `headFile`, and
   * whatever `extra` writes, in one atomic folder swap.
   */
  protected async saveFolder(
    dir: string,
    headFile: string,
    generation?: GenerationDefaults | undefined,
    extra?: (tmp: string) => Promise<void>,
  ): Promise<void> {
    this.check();
    await replaceDirAtomic(dir, async (tmp) => {
      await savePretrained(tmp, { model: this.backbone, tokenizer: this.tokenizer, generation });
      await this.head.save(path.join(tmp, headFile));
      await extra?.(tmp);
    });
  }

  /** Final hidden states at each row's last real token, [rows, hidden]; differentiable. */
  lastHidden(batch: PaddedBatch): tf.Tensor2D {
    this.check();
    return tf.tidy(() => {
      const padded = batch.mask.includes(0);
      // Right padding needs no key mask (padding follows every real token, the causal mask hides
      // it) and real tokens already sit at positions 0…n−1; left padding needs both.
      const h = this.backbone.hidden({
        ids: batch.ids,
        batch: batch.batch,
        length: batch.length,
        sequenceLengths: realLengths(batch),
        ...(padded && batch.side === "left" ? { keyMask: batch.mask, positions: batch.positions } : {}),
      });
      return gatherRows(h, batch.lastRows);
    });
  }

  /** The head's number for each token row, [rows]; differentiable with respect to head and backbone. */
  scalarsForIds(rows: readonly (readonly number[])[], paddingSide: PaddingSide = "right"): tf.Tensor1D {
    return tf.tidy(() => this.head.apply(this.lastHidden(padRows(rows, this.padTokenId, paddingSide))));
  }

  /** The head's number for each token row without gradients, `batchSize` rows per forward pass. */
  scalarsNoGrad(rows: readonly (readonly number[])[], batchSize: number, paddingSide: PaddingSide = "right"): number[] {
    const out: number[] = [];
    for (let start = 0; start < rows.length; start += batchSize) {
      const s = this.scalarsForIds(rows.slice(start, start + batchSize), paddingSide);
      out.push(...s.dataSync());
      s.dispose();
    }
    return out;
  }

  /** Backbone and head weights by name (Hugging Face names, `<prefix>.*` for the head). */
  namedVariables(): Map<string, tf.Variable> {
    return new Map([...this.backbone.params, ...this.head.params]);
  }

  /** Every variable, backbone then head. */
  trainableVariables(): tf.Variable[] {
    this.check();
    return [...this.backbone.trainableVariables(), ...this.head.trainableVariables()];
  }

  /** Maps gradients keyed by tf variable names (as tf.variableGrads returns them) to weight names. */
  gradsByWeightName(grads: tf.NamedTensorMap): Map<string, tf.Tensor> {
    const { backbone, head } = splitGrads(this.backbone, this.head, grads);
    return new Map([...backbone, ...head]);
  }

  /** Every scalar weight, backbone and head. */
  numParameters(): number {
    let n = this.backbone.numParameters();
    for (const v of this.head.params.values()) n += v.size;
    return n;
  }

  dispose(): void {
    if (this.disposed) return;
    this.backbone.dispose();
    this.head.dispose();
    this.disposed = true;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Throws `disposedError()` once disposed. */
  protected check(): void {
    if (this.disposed) throw this.disposedError();
  }

  protected disposedError(): Error {
    return new Error("this model has been disposed");
  }
}
