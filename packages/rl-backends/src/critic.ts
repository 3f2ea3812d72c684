import { existsSync } from "node:fs";
import * as path from "node:path";
import { AdamW, addGrads, globalGradNorm, mean, NonFiniteError, onDevice, tf, type RngStream } from "@pbrl/core-tensor";
import { gatherRows, headOn, loadPretrained, ScalarHead, ScalarHeadModel, type CausalLM, type Tokenizer } from "@pbrl/models";
import { valueLoss, valueLossTerms } from "./value-loss.js";

/**
 * Critics of the actor-critic algorithms (MAAC, IAC).
 *
 * A `Critic` is a `ScalarHeadModel` (a causal-LM backbone plus a scalar head) whose head
 * (prefix `value_head`) maps the final hidden state at the last token of a text to V. It reads
 * text, tokenised with its own tokenizer, so a critic checkpoint (`critic_model_name`) need not
 * share the agents' vocabulary (CoMLRL tokenises with agent 0's tokenizer and must).
 *
 * `critic_type`: "v" reads prompts only, V(s); "q" reads prompts and responses, Q(s, a).
 *
 * Value head (`critic_value_head_hidden_dim` / `value_head_hidden_dim`): 0/null → one linear
 * layer hidden → 1 with bias; h > 0 → Linear(hidden → h), ReLU, Linear(h → 1). Weights start as
 * normal(0, 0.02), biases 0 (CoMLRL's init; its two-layer head uses Tanh, `ScalarHead` ReLU).
 */
export type CriticType = "v" | "q";
export const CRITIC_TYPES: readonly CriticType[] = ["v", "q"];

/** Weight-name prefix of value heads (CoMLRL's attribute name). */
export const VALUE_HEAD_PREFIX = "value_head";
/** The head's file inside a saved critic folder. */
export const VALUE_HEAD_FILE = "value_head.safetensors";
/** Standard deviation of the value head's initial weights. */
export const VALUE_HEAD_INIT_STD = 0.02;

export function checkCriticType(t: string): CriticType {
  if (!(CRITIC_TYPES as readonly string[]).includes(t)) throw new RangeError(`critic_type must be "v" or "q", got ${JSON.stringify(t)}`);
  return t as CriticType;
}

/**
 * The text MAAC's centralized critic reads — CoMLRL's `_build_critic_input` layout, literally:
 * each agent's prompt as `[Agent {i}] {prompt}` (0-based i), joined by a blank line; for
 * critic_type "q" (when `actions` is given) followed by a `[Joint Action]` block with
 * `[Agent {i} action]` + newline + completion per agent, the same separator throughout:
 *
 *   [Agent 0] <prompt 0>\n\n[Agent 1] <prompt 1>\n\n[Joint Action]\n\n[Agent 0 action]\n<a0>\n\n[Agent 1 action]\n<a1>
 */
export function maacCriticText(prompts: readonly string[], actions?: readonly string[]): string {
  const parts = prompts.map((p, i) => `[Agent ${i}] ${p}`);
  if (actions !== undefined) {
    if (actions.length !== prompts.length)
      throw new RangeError(`MAAC critic text: ${actions.length} action(s) for ${prompts.length} agent prompt(s); one per agent`);
    parts.push("[Joint Action]", ...actions.map((a, i) => `[Agent ${i} action]\n${a}`));
  }
  return parts.join("\n\n");
}

/**
 * The text an IAC separate critic reads: the agent's own prompt ("v"), or the prompt followed
 * directly by the agent's response ("q") — the sequence the actor itself conditioned on and
 * produced, as CoMLRL's IAC critics read [prompt ; response].
 */
export function iacCriticText(prompt: string, completion?: string): string {
  return completion === undefined ? prompt : prompt + completion;
}

/** One critic input with the samples that share it: e.g. V(s) of an item and its G returns. */
export interface CriticRow {
  ids: readonly number[];
  /** The regression targets (shaped returns) this row's value is fitted to. */
  targets: readonly number[];
  /** V_old of each target (the value at collection time), for value clipping. */
  oldValues?: readonly number[] | undefined;
}

export interface CriticFitOptions {
  /** value_loss_coef: scales the loss (and so its gradient) before the critic's optimizer step. */
  valueLossCoef: number;
  /** value_clip_range; undefined/null: no clipping. */
  clipRange?: number | null | undefined;
  /** Names the batch in errors. */
  where: string;
  /** Critic rows per forward pass (default all). */
  maxRowsPerForward?: number | undefined;
}

export interface CriticFitMetrics {
  /** Mean ½-squared error over the samples (unscaled by value_loss_coef), pre-step. */
  valueLoss: number;
  /** Mean prediction over the samples, pre-step. */
  valueMean: number;
  targetMean: number;
  /** Fraction of samples whose clipped term won (0 without clipping). */
  clipFraction: number;
}

export interface CreateCriticOptions {
  /** The backbone (copied unless `copy: false`, in which case the critic owns and disposes it). */
  backbone: CausalLM;
  /**
   * Where the critic lives (`critic_devices`): "auto"/undefined keeps the backbone's device; a
   * device name moves the copy there (with `copy: false`, a backbone elsewhere is copied there
   * and freed). The value head is made beside the backbone.
   */
  device?: string;
  tokenizer: Tokenizer;
  /** 0/undefined/null: linear head; > 0: one hidden layer of that width. */
  headHiddenDim?: number | null | undefined;
  /** Draws the head's initial weights. */
  rng: RngStream;
  /** critic_learning_rate (None → the agents' learning rate: the caller resolves it). */
  learningRate: number;
  /** AdamW weight decay (default 0.01, PyTorch's default as CoMLRL uses it). */
  weightDecay?: number;
  /** Token limit of a critic text (keeps the end); default the backbone's max_position_embeddings. */
  maxLength?: number;
  /** Default: the tokenizer's pad id, else the backbone's, else EOS, else 0 (padding is never read). */
  padTokenId?: number;
  copy?: boolean;
}

function checkHiddenDim(d: number | null | undefined, field: string): number {
  const v = d ?? 0;
  if (!Number.isInteger(v) || v < 0) throw new RangeError(`${field} must be an integer ≥ 0 (or null for a linear head), got ${String(d)}`);
  return v;
}

function checkLr(lr: number, field: string): void {
  if (!(lr > 0) || !Number.isFinite(lr)) throw new RangeError(`${field} must be a finite number > 0, got ${lr}`);
}

function initValueHead(hiddenSize: number, hiddenDim: number, rng: RngStream): ScalarHead {
  return ScalarHead.init({ hiddenSize, hiddenDim, bias: true, prefix: VALUE_HEAD_PREFIX }, rng, VALUE_HEAD_INIT_STD);
}

/**
 * The critic's backbone on `device` ("auto": where `backbone` is): a copy when `copy`, else
 * `backbone` itself, or a copy on the device with `backbone` freed (the critic owns it).
 */
function placedBackbone(backbone: CausalLM, device: string, copy: boolean): CausalLM {
  const target = device === "auto" || device === backbone.device() ? undefined : device;
  if (!copy && target === undefined) return backbone;
  const placed = backbone.clone(target);
  if (!copy) backbone.dispose();
  return placed;
}

/** A causal-LM backbone with a value head and its own AdamW (`critic_learning_rate`). */
export class Critic extends ScalarHeadModel {
  readonly optimizer: AdamW;
  maxLength: number;

  private constructor(
    backbone: CausalLM,
    head: ScalarHead,
    tokenizer: Tokenizer,
    learningRate: number,
    weightDecay: number,
    maxLength: number,
    padTokenId?: number,
  ) {
    super(backbone, head, tokenizer, padTokenId);
    this.optimizer = new AdamW(this.namedVariables(), { lr: learningRate, weightDecay });
    this.maxLength = maxLength;
  }

  static create(o: CreateCriticOptions): Critic {
    checkLr(o.learningRate, "critic_learning_rate");
    const hiddenDim = checkHiddenDim(o.headHiddenDim, "critic_value_head_hidden_dim");
    const maxLength = o.maxLength ?? o.backbone.config.maxPositionEmbeddings;
    if (!Number.isInteger(maxLength) || maxLength < 1) throw new RangeError(`critic maxLength must be an integer ≥ 1, got ${maxLength}`);
    const backbone = placedBackbone(o.backbone, o.device ?? "auto", o.copy !== false);
    const head = onDevice(backbone.device(), () => initValueHead(backbone.config.hiddenSize, hiddenDim, o.rng));
    return new Critic(backbone, head, o.tokenizer, o.learningRate, o.weightDecay ?? 0.01, maxLength, o.padTokenId);
  }

  /** Writes the backbone as a Hugging Face checkpoint folder plus `value_head.safetensors` (weights only; the optimizer state is `optimizer.getState()`). */
  async save(dir: string): Promise<void> {
    await this.saveFolder(dir, VALUE_HEAD_FILE);
  }

  /** Loads a folder written by `save`, with a fresh optimizer, on `device` (default "auto": where the backend puts new tensors). */
  static async load(dir: string, o: { learningRate: number; weightDecay?: number; maxLength?: number; device?: string }): Promise<Critic> {
    checkLr(o.learningRate, "critic_learning_rate");
    const file = path.join(dir, VALUE_HEAD_FILE);
    if (!existsSync(file)) throw new Error(`${dir} is not a saved critic: ${VALUE_HEAD_FILE} is missing`);
    const p = await loadPretrained(dir, o.device !== undefined && o.device !== "auto" ? { device: o.device } : {});
    let head: ScalarHead | undefined;
    try {
      if (p.tokenizer === undefined) throw new Error(`${dir} has no tokenizer.json`);
      head = headOn(await ScalarHead.load(file), p.model.device(), "value head");
      if (head.options.hiddenSize !== p.model.config.hiddenSize || head.prefix !== VALUE_HEAD_PREFIX)
        throw new Error(`${file} does not hold a value head for this backbone`);
      return new Critic(p.model, head, p.tokenizer, o.learningRate, o.weightDecay ?? 0.01, o.maxLength ?? p.model.config.maxPositionEmbeddings);
    } catch (err) {
      p.model.dispose();
      head?.dispose();
      throw err;
    }
  }

  /** Token ids of a critic text, at most `maxLength` of them (the end is kept: it holds the last agent's text / the joint action). */
  encode(text: string): number[] {
    const ids = this.tokenizer.encode(text);
    if (ids.length === 0) throw new RangeError("critic: a critic text encodes to no tokens");
    return ids.length > this.maxLength ? ids.slice(ids.length - this.maxLength) : ids;
  }

  /** V of each row (value head at the row's last token), [rows]; differentiable. */
  valuesForIds(rows: readonly (readonly number[])[]): tf.Tensor1D {
    return this.scalarsForIds(rows);
  }

  /** V of each row without gradients, in batches of `batchSize` (default 16). */
  predictIds(rows: readonly (readonly number[])[], batchSize = 16): number[] {
    return this.scalarsNoGrad(rows, batchSize);
  }

  /** V of each text without gradients. */
  predict(texts: readonly string[], batchSize = 16): number[] {
    return this.predictIds(
      texts.map((t) => this.encode(t)),
      batchSize,
    );
  }

  /**
   * One optimizer step on `value_loss_coef · mean value loss` over every sample of `rows` (each
   * row's value is fitted to each of its targets; see value-loss.ts). Metrics come from the
   * forward pass that produced the gradients (pre-step).
   */
  fit(rows: readonly CriticRow[], o: CriticFitOptions): CriticFitMetrics {
    this.check();
    const grads = new Map<string, tf.Tensor>();
    try {
      const m = fitValues(
        rows,
        o,
        "critic",
        (part) => this.valuesForIds(part),
        this.trainableVariables(),
        (raw) => this.gradsByWeightName(raw),
        grads,
      );
      this.optimizer.step(grads);
      return m;
    } finally {
      tf.dispose([...grads.values()]);
    }
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.optimizer.dispose();
    super.dispose();
  }

  protected override disposedError(): Error {
    return new Error("this critic has been disposed");
  }
}

/**
 * Accumulates into `grads` the gradient of coef · Σ ℓ / N over all samples of `rows` (N = their
 * total), computing values with `forward` in chunks; returns the pre-step metrics.
 */
function fitValues(
  rows: readonly CriticRow[],
  o: CriticFitOptions,
  what: string,
  forward: (ids: readonly (readonly number[])[]) => tf.Tensor1D,
  vars: tf.Variable[],
  name: (raw: tf.NamedTensorMap) => Map<string, tf.Tensor>,
  grads: Map<string, tf.Tensor>,
): CriticFitMetrics {
  if (!(o.valueLossCoef >= 0) || !Number.isFinite(o.valueLossCoef)) throw new RangeError(`value_loss_coef must be a finite number ≥ 0, got ${o.valueLossCoef}`);
  if (rows.length === 0) throw new RangeError(`${what}: no rows to fit in ${o.where}`);
  const total = rows.reduce((a, r) => a + r.targets.length, 0);
  if (total === 0) throw new RangeError(`${what}: no targets to fit in ${o.where}`);
  rows.forEach((r, k) => {
    const bad = r.targets.findIndex((t) => !Number.isFinite(t));
    if (bad >= 0) throw new NonFiniteError(`${what}: target ${bad} of row ${k} is ${r.targets[bad]} in ${o.where}`);
  });
  const chunk = o.maxRowsPerForward ?? rows.length;
  if (!Number.isInteger(chunk) || chunk < 1) throw new RangeError(`maxRowsPerForward must be an integer ≥ 1, got ${chunk}`);
  const preds: number[] = [];
  const targets: number[] = [];
  const olds: number[] = [];
  let loss = 0;
  for (let s = 0; s < rows.length; s += chunk) {
    const part = rows.slice(s, s + chunk);
    // Row k's value repeated once per target: a gather with a custom gradient (wasm-safe).
    const expand = Int32Array.from(part.flatMap((r, k) => r.targets.map(() => k)));
    const tg = part.flatMap((r) => [...r.targets]);
    const old =
      o.clipRange !== undefined && o.clipRange !== null
        ? part.flatMap((r, k) => {
            if (r.oldValues === undefined || r.oldValues.length !== r.targets.length)
              throw new RangeError(`${what}: row ${s + k} needs one old value per target for value clipping (${o.where})`);
            return [...r.oldValues];
          })
        : undefined;
    const { value, grads: raw } = tf.variableGrads(() => {
      const v = forward(part.map((r) => r.ids));
      const per = tf.reshape(gatherRows(tf.reshape(v, [-1, 1]) as tf.Tensor2D, expand), [-1]) as tf.Tensor1D;
      preds.push(...per.dataSync());
      return tf.mul(valueLoss(per, tg, { oldValues: old, clipRange: o.clipRange, denominator: total }), o.valueLossCoef) as tf.Scalar;
    }, vars);
    loss += value.dataSync()[0]!;
    value.dispose();
    addGrads(grads, name(raw));
    targets.push(...tg);
    if (old !== undefined) olds.push(...old);
  }
  const bad = preds.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw new NonFiniteError(`${what}: non-finite value prediction (${preds[bad]}) in ${o.where}`);
  if (!Number.isFinite(loss)) throw new NonFiniteError(`${what}: non-finite value loss (${loss}) in ${o.where}`);
  const norm = globalGradNorm(grads.values());
  if (!Number.isFinite(norm)) throw new NonFiniteError(`${what}: non-finite gradients (norm ${norm}) in ${o.where}`);
  const terms = valueLossTerms(preds, targets, { oldValues: olds.length > 0 ? olds : undefined, clipRange: o.clipRange });
  const n = preds.length;
  return {
    valueLoss: mean(terms.losses),
    valueMean: mean(preds),
    targetMean: mean(targets),
    clipFraction: terms.clipped.filter(Boolean).length / n,
  };
}

/**
 * IAC's shared actor-critic layout (`use_separate_critic=false`): a value head on an actor's own
 * backbone (`value_head_hidden_dim`). The head has its own AdamW at the agent's learning rate;
 * the backbone is stepped by the agent's own optimizer with the gradient of the combined loss
 * (policy + value_loss_coef · value), so the value loss trains the actor's backbone too. Two
 * AdamW instances over disjoint parameters are exactly one AdamW over their union.
 */
export class ActorValueHead {
  readonly optimizer: AdamW;
  private disposed = false;

  private constructor(
    readonly head: ScalarHead,
    learningRate: number,
    weightDecay: number,
  ) {
    this.optimizer = new AdamW(head.params, { lr: learningRate, weightDecay });
  }

  /** `device`: the actor's (the head reads its hidden states); default "auto", where the backend puts new tensors. */
  static create(o: {
    hiddenSize: number;
    hiddenDim?: number | null | undefined;
    rng: RngStream;
    learningRate: number;
    weightDecay?: number;
    device?: string;
  }): ActorValueHead {
    checkLr(o.learningRate, "agent_learning_rate");
    const hiddenDim = checkHiddenDim(o.hiddenDim, "value_head_hidden_dim");
    return new ActorValueHead(
      onDevice(o.device ?? "auto", () => initValueHead(o.hiddenSize, hiddenDim, o.rng)),
      o.learningRate,
      o.weightDecay ?? 0.01,
    );
  }

  static async load(file: string, o: { learningRate: number; weightDecay?: number; device?: string }): Promise<ActorValueHead> {
    checkLr(o.learningRate, "agent_learning_rate");
    const head = await ScalarHead.load(file);
    return new ActorValueHead(
      o.device === undefined || o.device === "auto" ? head : headOn(head, o.device, "value head"),
      o.learningRate,
      o.weightDecay ?? 0.01,
    );
  }

  /** Writes the head (e.g. `agent_{i}/value_head.safetensors`). */
  async save(file: string): Promise<void> {
    await this.head.save(file);
  }

  dispose(): void {
    if (this.disposed) return;
    this.optimizer.dispose();
    this.head.dispose();
    this.disposed = true;
  }
}
