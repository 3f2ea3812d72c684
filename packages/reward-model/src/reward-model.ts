import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { AdamW, globalGradNorm, onDevice, tf, writeFileAtomic, type HostTensor, type RngStream } from "@pbrl/core-tensor";
import {
  headOn,
  loadPretrained,
  padRows,
  ScalarHead,
  ScalarHeadModel,
  type CausalLM,
  type GenerationDefaults,
  type PaddingSide,
  type Pretrained,
  type Tokenizer,
} from "@pbrl/models";
import type { PairRecord } from "@pbrl/preference-data";
import { jointText } from "./joint-text.js";
import { bradleyTerryLoss, pairMetrics, type PairMetrics } from "./loss.js";
import { encodeKeepEnd } from "./tokenize.js";

/** The head's weight file inside a saved reward model folder. */
export const REWARD_HEAD_FILE = "reward_head.safetensors";
/** Reward-model settings saved beside the head (optional when loading). */
export const REWARD_CONFIG_FILE = "reward_model.json";
/** Weight-name prefix of the head: CoMLRL's attribute name, so its state-dict keys match. */
export const REWARD_HEAD_PREFIX = "reward_head";
// Stryker disable next-line StringLiteral: it names the head's weights only in shape errors, and the heads built from host weights here are given their own weights' shapes
const HEAD_LABEL = "reward head";

/** One joint response to score: every agent's prompt and completion. */
export interface JointInput {
  prompts: readonly string[];
  completions: readonly string[];
}

export class RewardModelError extends Error {
  override name = "RewardModelError";
}

/** A non-finite loss or gradient during reward-model training. */
export class NonFiniteRewardError extends RewardModelError {
  override name = "NonFiniteRewardError";
}

export interface CreateRewardModelOptions {
  /**
   * The backbone: a checkpoint folder or hub id, or a loaded checkpoint. A loaded one is copied
   * (its tokenizer is shared, being immutable): the reward model never shares weights with the
   * agents.
   */
  source: string | Pretrained;
  /** Train only the head (default false, as CoMLRL's `reward_freeze_backbone`). */
  freezeBackbone?: boolean;
  /**
   * Draws the head's initial weights: PyTorch's nn.Linear default, weight and bias uniform in
   * ±1/√hidden. Required unless `headFile` is given.
   */
  rng?: RngStream;
  /** Start from a saved head (`reward_head.safetensors`) instead of a random one. */
  headFile?: string;
  /** Default token limit of a joint text (`reward_max_length`); see `JointRewardModel.maxLength`. */
  maxLength?: number;
  /** Hub revision when `source` is a hub id. */
  revision?: string;
  /**
   * Where the backbone and head live (`reward_model_device`): a device of the backend (libtorch:
   * "cpu", "cuda", "cuda:N"), or "auto"/undefined — a checkpoint then loads where the backend
   * puts new tensors and a copied model stays on its source's device. A device the backend cannot
   * place tensors on is a DeviceUnavailableError.
   */
  device?: string;
}

export interface ScoreOptions {
  /** Texts per forward pass (default 8). */
  batchSize?: number;
  /** Token limit; default the model's `maxLength`. */
  maxLength?: number;
  /** Padding side of the batches (default right); scores do not depend on it. */
  paddingSide?: PaddingSide;
}

/** Metrics of one training batch, computed in the forward pass of its update (before the step). */
export interface RewardBatchMetrics extends PairMetrics {
  /** 1-based epoch. */
  epoch: number;
  /** 1-based batch within the epoch. */
  batch: number;
  /** Optimizer steps so far, this one included. */
  step: number;
  /** Pairs in this batch. */
  pairs: number;
}

export interface RewardTrainOptions {
  learningRate: number;
  epochs: number;
  /** Pairs per optimizer step; the last batch of an epoch may be smaller. */
  batchSize: number;
  /** Token limit of each joint text; default the model's `maxLength`. */
  maxLength?: number;
  /** Shuffles the pairs at the start of every epoch. */
  rng: RngStream;
  /** AdamW decoupled weight decay (default 0.01, PyTorch's default as CoMLRL uses it). */
  weightDecay?: number;
  onBatch?: (metrics: RewardBatchMetrics) => void | Promise<void>;
}

export interface RewardTrainResult {
  steps: number;
  /** Per epoch: the pair-weighted mean of the batch metrics. */
  epochs: (PairMetrics & { epoch: number })[];
}

export interface RewardEvalResult extends PairMetrics {
  pairs: number;
}

interface SavedConfig {
  format: "pbrl-joint-reward-model";
  version: 1;
  max_length: number | null;
  freeze_backbone: boolean;
}

/**
 * MARLHF's joint reward model R̃ψ(h, a): a `ScalarHeadModel` whose backbone reads all agents'
 * prompts and responses as one text (`jointText`), and whose linear head (hidden → 1, with bias)
 * maps the final hidden state at the last real token to a scalar.
 */
export class JointRewardModel extends ScalarHeadModel {
  /** Token limit of a joint text when a call gives none; undefined: no truncation. */
  maxLength: number | undefined;

  private constructor(
    backbone: CausalLM,
    head: ScalarHead,
    tokenizer: Tokenizer,
    private readonly generation: GenerationDefaults | undefined,
    readonly freezeBackbone: boolean,
    maxLength: number | undefined,
  ) {
    super(backbone, head, tokenizer);
    this.maxLength = maxLength;
  }

  /** A reward model from a backbone checkpoint, with a fresh head (or one loaded from `headFile`). */
  static async create(options: CreateRewardModelOptions): Promise<JointRewardModel> {
    if ((options.rng === undefined) === (options.headFile === undefined)) {
      throw new RewardModelError("JointRewardModel.create needs exactly one of `rng` (random head) and `headFile` (saved head)");
    }
    if (options.maxLength !== undefined) checkMaxLength(options.maxLength);
    let backbone: CausalLM;
    let tokenizer: Tokenizer | undefined;
    let generation: GenerationDefaults | undefined;
    let where: string;
    const device = options.device ?? "auto";
    if (typeof options.source === "string") {
      const loaded = await loadPretrained(options.source, { revision: options.revision, device });
      ({ model: backbone, tokenizer, generation } = loaded);
      where = loaded.dir;
    } else {
      ({ tokenizer, generation } = options.source);
      const source = options.source.model;
      // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: clone("auto") and clone(its own device) copy as clone() does (tensors are immutable), so this only picks the shorter path
      backbone = source.clone(device === "auto" || device === source.device() ? undefined : device);
      where = options.source.dir;
    }
    let head: ScalarHead | undefined;
    try {
      if (tokenizer === undefined) throw new RewardModelError(`${where} has no tokenizer.json: the reward model tokenizes with its backbone's tokenizer`);
      const hiddenSize = backbone.config.hiddenSize;
      // The head reads the backbone's hidden states: it lives where they are.
      const on = backbone.device();
      head =
        options.headFile !== undefined
          ? headOn(await loadHead(options.headFile, hiddenSize), on, HEAD_LABEL)
          : onDevice(on, () => initHead(hiddenSize, options.rng!));
      return new JointRewardModel(
        backbone,
        head,
        tokenizer,
        generation,
        options.freezeBackbone ?? false,
        options.maxLength ?? defaultMaxLength(tokenizer, backbone),
      );
    } catch (err) {
      backbone.dispose();
      head?.dispose();
      throw err;
    }
  }

  /**
   * Loads a folder written by `save`. `freezeBackbone` and `maxLength` default to the saved
   * settings (`reward_model.json`), or to false and the tokenizer's limit when that file is absent;
   * `device` places it as in `create`.
   */
  static async load(dir: string, options: { freezeBackbone?: boolean; maxLength?: number; device?: string } = {}): Promise<JointRewardModel> {
    const headFile = path.join(dir, REWARD_HEAD_FILE);
    if (!existsSync(headFile)) {
      throw new RewardModelError(
        `${dir} is not a saved reward model: ${REWARD_HEAD_FILE} is missing (a plain causal-LM checkpoint can start one with JointRewardModel.create)`,
      );
    }
    let saved: Partial<SavedConfig> = {};
    const configFile = path.join(dir, REWARD_CONFIG_FILE);
    if (existsSync(configFile)) {
      try {
        saved = JSON.parse(await fs.readFile(configFile, "utf8")) as Partial<SavedConfig>;
      } catch (err) {
        throw new RewardModelError(`${configFile} is not valid JSON: ${(err as Error).message}`);
      }
    }
    const maxLength = options.maxLength ?? (typeof saved.max_length === "number" ? saved.max_length : undefined);
    return JointRewardModel.create({
      source: dir,
      headFile,
      freezeBackbone: options.freezeBackbone ?? saved.freeze_backbone === true,
      maxLength,
      device: options.device,
    });
  }

  /** Writes the backbone as a Hugging Face checkpoint folder plus the head and settings, in one atomic folder swap. */
  async save(dir: string): Promise<void> {
    const settings: SavedConfig = { format: "pbrl-joint-reward-model", version: 1, max_length: this.maxLength ?? null, freeze_backbone: this.freezeBackbone };
    await this.saveFolder(dir, REWARD_HEAD_FILE, this.generation, (tmp) =>
      writeFileAtomic(path.join(tmp, REWARD_CONFIG_FILE), JSON.stringify(settings, null, 2) + "\n"),
    );
  }

  /**
   * Token ids of one joint response (or a ready text), truncated to keep its end (see
   * `encodeKeepEnd`). A joint response needs one prompt and one completion per agent, at least
   * one agent: a mismatch is a caller's bug that CoMLRL would hide by scoring empty strings.
   */
  encode(input: JointInput | string, maxLength: number | undefined = this.maxLength): number[] {
    if (maxLength !== undefined) checkMaxLength(maxLength);
    if (typeof input !== "string") checkJointInput(input, "input");
    const text = typeof input === "string" ? input : jointText(input.prompts, input.completions);
    return encodeKeepEnd(this.tokenizer, text, maxLength);
  }

  /** Scores of token rows, [rows]; differentiable with respect to head and backbone. */
  // Stryker disable next-line StringLiteral: padRows pads on the right for every side but "left", so "" pads as "right" does
  rewardsForIds(rows: readonly (readonly number[])[], paddingSide: PaddingSide = "right"): tf.Tensor1D {
    return this.scalarsForIds(rows, paddingSide);
  }

  /**
   * Scores of token rows without gradients, in batches. A non-finite score throws
   * `NonFiniteRewardError` (naming the row) instead of reaching a policy update as a reward.
   */
  scoreIds(rows: readonly (readonly number[])[], options: Omit<ScoreOptions, "maxLength"> = {}): number[] {
    this.check();
    const size = options.batchSize ?? 8;
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`batchSize must be an integer ≥ 1, got ${size}`);
    // Stryker disable next-line LogicalOperator,StringLiteral: padRows pads on the right for every side but "left", undefined and "" included
    const out = this.scalarsNoGrad(rows, size, options.paddingSide ?? "right");
    const bad = out.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new NonFiniteRewardError(`reward model: non-finite score (${out[bad]}) for row ${bad}; its weights hold NaN or Inf`);
    return out;
  }

  /** R̃ψ of each joint response: batched forward passes, no gradients. An empty batch gives []. */
  scores(batch: readonly JointInput[], options: ScoreOptions = {}): number[] {
    const rows = batch.map((input, i) => {
      checkJointInput(input, `batch[${i}]`);
      return this.encode(input, options.maxLength ?? this.maxLength);
    });
    return this.scoreIds(rows, options);
  }

  /**
   * R̃ψ of the joint responses of one rollout item: `completions[agent][g]` is agent `agent`'s
   * g-th sample, and joint response g is every agent's g-th sample (CoMLRL's aligned joint
   * mode), read with the agents' `prompts`. Returns one score per g. Every agent must have the
   * same number of samples: CoMLRL silently scores only the shortest count.
   */
  scoreRollouts(prompts: readonly string[], completions: readonly (readonly string[])[], options: ScoreOptions = {}): number[] {
    if (completions.length !== prompts.length || prompts.length === 0) {
      throw new RangeError(
        `scoreRollouts: completions has ${completions.length} agent(s) but prompts has ${prompts.length}; one list of samples per agent, at least one agent`,
      );
    }
    const g = completions[0]!.length;
    completions.forEach((c, i) => {
      if (c.length !== g)
        throw new RangeError(`scoreRollouts: completions[${i}] has ${c.length} sample(s) but completions[0] has ${g}; joint responses pair samples by index`);
    });
    return this.scores(
      Array.from({ length: g }, (_, k) => ({ prompts, completions: completions.map((c) => c[k]!) })),
      options,
    );
  }

  /**
   * The differentiable Bradley–Terry loss of pairs given as token rows: winners and losers in one
   * padded batch, one forward pass. Also returns the score differences s_w − s_l.
   */
  pairLoss(winners: readonly (readonly number[])[], losers: readonly (readonly number[])[]): { loss: tf.Scalar; diffs: Float32Array } {
    if (winners.length !== losers.length || winners.length === 0)
      throw new RangeError(`pairLoss needs as many winners as losers, at least one (got ${winners.length} and ${losers.length})`);
    let diffs = new Float32Array(0);
    const loss = tf.tidy(() => {
      const n = winners.length;
      const s = this.rewardsForIds([...winners, ...losers]);
      const d = tf.sub(tf.slice(s, [0], [n]), tf.slice(s, [n], [n])) as tf.Tensor1D;
      diffs = Float32Array.from(d.dataSync());
      return bradleyTerryLoss(d);
    });
    return { loss, diffs };
  }

  /**
   * Fits the model to preference pairs with the Bradley–Terry loss mean(−log σ(s_w − s_l)):
   * each epoch shuffles the pairs (`rng`), then one AdamW step per batch of `batchSize` pairs,
   * over the head only when the backbone is frozen. A fresh optimizer per call.
   */
  async train(pairs: readonly PairRecord[], options: RewardTrainOptions): Promise<RewardTrainResult> {
    this.check();
    const { learningRate, epochs, batchSize } = options;
    if (pairs.length === 0) throw new RangeError("pairs is empty: no preference pairs to train the reward model on");
    if (!(learningRate > 0) || !Number.isFinite(learningRate))
      throw new RangeError(`learningRate (reward_learning_rate) must be a finite number > 0, got ${learningRate}`);
    if (!Number.isInteger(epochs) || epochs < 1) throw new RangeError(`epochs (reward_num_train_epochs) must be an integer ≥ 1, got ${epochs}`);
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize (reward_train_batch_size) must be an integer ≥ 1, got ${batchSize}`);
    const tokens = this.encodePairs(pairs, options.maxLength ?? this.maxLength);
    const params = this.namedTrainableVariables();
    const optimizer = new AdamW(params, { lr: learningRate, weightDecay: options.weightDecay });
    const result: RewardTrainResult = { steps: 0, epochs: [] };
    try {
      for (let epoch = 1; epoch <= epochs; epoch++) {
        const order = options.rng.permutation(pairs.length);
        const sums = { loss: 0, accuracy: 0, margin: 0 };
        for (let start = 0, batch = 1; start < order.length; start += batchSize, batch++) {
          const idx = order.slice(start, start + batchSize);
          const m = this.step(
            optimizer,
            idx.map((i) => tokens.winners[i]!),
            idx.map((i) => tokens.losers[i]!),
            `epoch ${epoch}, batch ${batch}`,
          );
          result.steps++;
          sums.loss += m["reward/loss"] * idx.length;
          sums.accuracy += m["reward/accuracy"] * idx.length;
          sums.margin += m["reward/margin"] * idx.length;
          await options.onBatch?.({ ...m, epoch, batch, step: result.steps, pairs: idx.length });
        }
        const n = pairs.length;
        result.epochs.push({ epoch, "reward/loss": sums.loss / n, "reward/accuracy": sums.accuracy / n, "reward/margin": sums.margin / n });
      }
    } finally {
      optimizer.dispose();
    }
    return result;
  }

  private step(optimizer: AdamW, winners: number[][], losers: number[][], where: string): PairMetrics {
    let diffs = new Float32Array(0);
    const lossOf = (scores: tf.Tensor1D): tf.Scalar => {
      const n = winners.length;
      const d = tf.sub(tf.slice(scores, [0], [n]), tf.slice(scores, [n], [n])) as tf.Tensor1D;
      diffs = Float32Array.from(d.dataSync());
      return bradleyTerryLoss(d);
    };
    // Stryker disable next-line StringLiteral: padRows pads on the right for every side but "left"
    const rows = padRows([...winners, ...losers], this.padTokenId, "right");
    let value: tf.Scalar;
    let grads: tf.NamedTensorMap;
    // Stryker disable next-line ConditionalExpression: the other branch takes the same gradients for a frozen model (its trainableVariables are the head's); this one keeps the backbone off the tape, a memory saving only
    if (this.freezeBackbone) {
      // The backbone's features are constants here: computing them outside the tape keeps the
      // backward pass (and its memory) to the head.
      const features = this.lastHidden(rows);
      try {
        ({ value, grads } = tf.variableGrads(() => lossOf(this.head.apply(features)), this.head.trainableVariables()));
      } finally {
        features.dispose();
      }
    } else {
      ({ value, grads } = tf.variableGrads(() => lossOf(this.head.apply(this.lastHidden(rows))), this.trainableVariables()));
    }
    const named = this.gradsByWeightName(grads);
    try {
      const loss = value.dataSync()[0]!;
      if (!Number.isFinite(loss)) throw new NonFiniteRewardError(`reward model: non-finite Bradley–Terry loss (${loss}) in ${where}`);
      const norm = globalGradNorm(named.values());
      if (!Number.isFinite(norm)) throw new NonFiniteRewardError(`reward model: non-finite gradients (norm ${norm}) in ${where}`);
      optimizer.step(named);
      return { ...pairMetrics(diffs), "reward/loss": loss };
    } finally {
      tf.dispose([value, ...named.values()]);
    }
  }

  /** Accuracy (s_w > s_l), mean margin and Bradley–Terry loss over pairs, without gradients. */
  evaluate(pairs: readonly PairRecord[], options: Omit<ScoreOptions, "paddingSide"> = {}): RewardEvalResult {
    if (pairs.length === 0) throw new RangeError("pairs is empty: no preference pairs to evaluate the reward model on");
    const tokens = this.encodePairs(pairs, options.maxLength ?? this.maxLength);
    const n = pairs.length;
    const s = this.scoreIds([...tokens.winners, ...tokens.losers], { batchSize: options.batchSize });
    return { ...pairMetrics(s.slice(0, n).map((w, i) => w - s[n + i]!)), pairs: n };
  }

  private encodePairs(pairs: readonly PairRecord[], maxLength: number | undefined): { winners: number[][]; losers: number[][] } {
    const winners: number[][] = [];
    const losers: number[][] = [];
    const agents = pairs[0]!.prompts.length;
    pairs.forEach((p, i) => {
      const n = p.prompts.length;
      if (n === 0) throw new RangeError(`pairs[${i}].prompts is empty: a pair needs one prompt per agent`);
      if (p.winner_completions.length !== n || p.loser_completions.length !== n) {
        throw new RangeError(
          `pairs[${i}]: ${n} prompts but ${p.winner_completions.length} winner_completions and ${p.loser_completions.length} loser_completions; one per agent`,
        );
      }
      // Pairs of one run share the agent count; a mix means records from different setups.
      if (n !== agents) throw new RangeError(`pairs[${i}] has ${n} agents but pairs[0] has ${agents}; every pair must come from the same number of agents`);
      winners.push(this.encode({ prompts: p.prompts, completions: p.winner_completions }, maxLength));
      losers.push(this.encode({ prompts: p.prompts, completions: p.loser_completions }, maxLength));
    });
    return { winners, losers };
  }

  /** The variables training updates: the head, plus every backbone weight unless frozen. */
  override trainableVariables(): tf.Variable[] {
    this.check();
    return this.freezeBackbone ? this.head.trainableVariables() : super.trainableVariables();
  }

  /** Trainable variables by weight name: Hugging Face names for the backbone, `reward_head.*` for the head. */
  namedTrainableVariables(): Map<string, tf.Variable> {
    const out = new Map<string, tf.Variable>(this.freezeBackbone ? [] : this.backbone.params);
    for (const [k, v] of this.head.params) out.set(k, v);
    return out;
  }

  protected override disposedError(): Error {
    return new RewardModelError("this reward model has been disposed");
  }
}

function checkJointInput(input: JointInput, where: string): void {
  const n = input.prompts.length;
  if (n === 0 || input.completions.length !== n) {
    throw new RangeError(`${where}: ${n} prompts but ${input.completions.length} completions; one prompt and one completion per agent, at least one agent`);
  }
}

function checkMaxLength(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`maxLength must be an integer ≥ 1, got ${n}`);
}

/**
 * CoMLRL's `reward_max_length=None` means the tokenizer's own limit (`model_max_length`); where
 * that is absent or the "no limit" sentinel, the backbone's `max_position_embeddings`.
 */
function defaultMaxLength(tokenizer: Tokenizer, backbone: CausalLM): number {
  const raw = tokenizer.files["tokenizer_config.json"];
  if (raw !== undefined) {
    const v = (JSON.parse(raw) as Record<string, unknown>)["model_max_length"];
    // Number.isInteger is false for anything but a number; transformers' "no limit" is about 1e30.
    if (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 1e7) return v as number;
  }
  return backbone.config.maxPositionEmbeddings;
}

/** PyTorch's nn.Linear default: weight and bias uniform in ±1/√fan_in (weights drawn first). */
function initHead(hiddenSize: number, rng: RngStream): ScalarHead {
  const bound = 1 / Math.sqrt(hiddenSize);
  const draw = (n: number) => Float32Array.from({ length: n }, () => (2 * rng.random() - 1) * bound);
  const host = new Map<string, HostTensor>([
    [`${REWARD_HEAD_PREFIX}.weight`, { dtype: "float32", shape: [1, hiddenSize], data: draw(hiddenSize) }],
    [`${REWARD_HEAD_PREFIX}.bias`, { dtype: "float32", shape: [1], data: draw(1) }],
  ]);
  return ScalarHead.fromHostWeights({ hiddenSize, hiddenDim: 0, bias: true, prefix: REWARD_HEAD_PREFIX }, host, HEAD_LABEL);
}

async function loadHead(file: string, hiddenSize: number): Promise<ScalarHead> {
  const head = await ScalarHead.load(file);
  const o = head.options;
  if (o.hiddenSize !== hiddenSize || o.hiddenDim !== 0 || !o.bias) {
    head.dispose();
    throw new RewardModelError(
      `${file}: a reward head is one linear layer ${hiddenSize} → 1 with bias, but this file holds hiddenSize ${o.hiddenSize}, hiddenDim ${o.hiddenDim}, bias ${o.bias}`,
    );
  }
  return head;
}
