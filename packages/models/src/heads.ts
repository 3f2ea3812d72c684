import type { RngStream } from "@pbrl/core-tensor";
import { checkFiniteWeight } from "./finite-weights.js";
import { matMul } from "./ops.js";
import { WeightLoadError } from "./weight-load-error.js";
import { readSafetensors, tf, variableFrom, writeSafetensors, type HostTensor, type TensorToWrite } from "@pbrl/core-tensor";

export interface ScalarHeadOptions {
  /** Width of the backbone's hidden states. */
  hiddenSize: number;
  /** 0: one linear layer (hidden → 1). > 0: hidden → hiddenDim → ReLU → 1. */
  hiddenDim?: number;
  /** Bias on the output layer (default false, as transformers' sequence-classification `score`). */
  bias?: boolean;
  /** Weight name prefix (default "score", so a reward model saves like LlamaForSequenceClassification). */
  prefix?: string;
}

/**
 * A scalar read-out of hidden states: the reward model's score head and the critics' value head.
 * Weights are named `<prefix>.weight` for the single-layer form (transformers' layout) or
 * `<prefix>.0.*` / `<prefix>.2.*` for the two-layer form (an nn.Sequential(Linear, ReLU, Linear)).
 */
export class ScalarHead {
  readonly params = new Map<string, tf.Variable>();
  readonly hiddenDim: number;
  readonly prefix: string;
  private static nextId = 0;
  private readonly id = ScalarHead.nextId++;

  private constructor(
    readonly options: Required<ScalarHeadOptions>,
    weights: Map<string, tf.Tensor>,
  ) {
    this.hiddenDim = options.hiddenDim;
    this.prefix = options.prefix;
    for (const [name, t] of weights) this.params.set(name, variableFrom(t, true, `head${this.id}/${name}`));
  }

  private static resolve(o: ScalarHeadOptions): Required<ScalarHeadOptions> {
    const r = { hiddenDim: 0, bias: false, prefix: "score", ...o };
    if (!Number.isInteger(r.hiddenSize) || r.hiddenSize <= 0) throw new RangeError(`head hiddenSize must be a positive integer, got ${r.hiddenSize}`);
    if (!Number.isInteger(r.hiddenDim) || r.hiddenDim < 0) throw new RangeError(`head hiddenDim must be an integer ≥ 0, got ${r.hiddenDim}`);
    return r;
  }

  private static shapes(o: Required<ScalarHeadOptions>): Map<string, number[]> {
    const p = o.prefix;
    if (o.hiddenDim === 0) {
      const m = new Map([[`${p}.weight`, [1, o.hiddenSize]]]);
      if (o.bias) m.set(`${p}.bias`, [1]);
      return m;
    }
    const m = new Map([
      [`${p}.0.weight`, [o.hiddenDim, o.hiddenSize]],
      [`${p}.0.bias`, [o.hiddenDim]],
      [`${p}.2.weight`, [1, o.hiddenDim]],
    ]);
    if (o.bias) m.set(`${p}.2.bias`, [1]);
    return m;
  }

  /** Fresh weights: normal(0, std) for matrices (default std 1/√(fan_in+1)), zeros for biases. */
  static init(options: ScalarHeadOptions, rng: RngStream, std?: number): ScalarHead {
    const o = ScalarHead.resolve(options);
    const weights = new Map<string, tf.Tensor>();
    for (const [name, shape] of ScalarHead.shapes(o)) {
      const n = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      if (name.endsWith("weight")) {
        const s = std ?? 1 / Math.sqrt(shape[1]! + 1);
        for (let i = 0; i < n; i++) data[i] = rng.normal() * s;
      }
      weights.set(name, tf.tensor(data, shape));
    }
    return new ScalarHead(o, weights);
  }

  static fromHostWeights(options: ScalarHeadOptions, host: ReadonlyMap<string, HostTensor>, source = "head"): ScalarHead {
    const o = ScalarHead.resolve(options);
    const weights = new Map<string, tf.Tensor>();
    for (const [name, shape] of ScalarHead.shapes(o)) {
      const t = host.get(name);
      if (t === undefined || t.dtype !== "float32" || t.shape.join() !== shape.join()) {
        tf.dispose([...weights.values()]);
        throw new Error(`${source}: head weight "${name}" is missing or not a float tensor of shape [${shape}]`);
      }
      weights.set(name, tf.tensor(t.data, shape));
    }
    return new ScalarHead(o, weights);
  }

  /** hidden [N, hiddenSize] → scalar [N]. */
  apply(hidden: tf.Tensor2D): tf.Tensor1D {
    return tf.tidy(() => {
      const p = this.prefix;
      const get = (n: string) => this.params.get(n)!;
      let x: tf.Tensor2D = hidden;
      let out = `${p}`;
      if (this.hiddenDim > 0) {
        x = tf.relu(tf.add(matMul(x, get(`${p}.0.weight`), false, true), get(`${p}.0.bias`))) as tf.Tensor2D;
        out = `${p}.2`;
      }
      let y = matMul(x, get(`${out}.weight`), false, true) as tf.Tensor2D;
      if (this.options.bias) y = tf.add(y, get(`${out}.bias`)) as tf.Tensor2D;
      return tf.reshape(y, [-1]) as tf.Tensor1D;
    });
  }

  trainableVariables(): tf.Variable[] {
    return [...this.params.values()];
  }

  gradsByWeightName(grads: tf.NamedTensorMap): Map<string, tf.Tensor> {
    const prefix = `head${this.id}/`;
    const out = new Map<string, tf.Tensor>();
    for (const [k, g] of Object.entries(grads)) if (k.startsWith(prefix)) out.set(k.slice(prefix.length), g);
    return out;
  }

  hostWeights(): Map<string, HostTensor> {
    const out = new Map<string, HostTensor>();
    for (const [name, v] of this.params) out.set(name, { dtype: "float32", shape: [...v.shape], data: Float32Array.from(v.dataSync() as Float32Array) });
    return out;
  }

  async save(file: string): Promise<void> {
    const tensors = new Map<string, TensorToWrite>([...this.hostWeights()].map(([k, t]) => [k, { tensor: t, dtype: "F32" }]));
    await writeSafetensors(file, tensors, { pbrl_head: JSON.stringify(this.options) });
  }

  static async load(file: string): Promise<ScalarHead> {
    const f = await readSafetensors(file);
    const meta = f.metadata["pbrl_head"];
    if (meta === undefined) throw new Error(`${file} is not a pbrl head file (no pbrl_head metadata)`);
    let options: ScalarHeadOptions;
    try {
      options = JSON.parse(meta) as ScalarHeadOptions;
    } catch (err) {
      throw new WeightLoadError(`${file}: its pbrl_head metadata is not valid JSON (${(err as Error).message}); the head file is corrupt, save the head again`);
    }
    for (const [name, t] of f.tensors) checkFiniteWeight(name, t.tensor, file);
    return ScalarHead.fromHostWeights(options, new Map([...f.tensors].map(([k, t]) => [k, t.tensor])), file);
  }

  dispose(): void {
    for (const v of this.params.values()) v.dispose();
  }
}

/**
 * Flat indices into [batch·length] of each row's last real token, for either padding side:
 * the last position whose mask entry is 1.
 */
export function lastTokenIndices(mask: ArrayLike<number>, batch: number, length: number): Int32Array {
  const out = new Int32Array(batch);
  for (let b = 0; b < batch; b++) {
    let last = -1;
    for (let i = 0; i < length; i++) if (mask[b * length + i] === 1) last = i;
    if (last < 0) throw new RangeError(`row ${b} has no real token (its mask is all zeros)`);
    out[b] = b * length + last;
  }
  return out;
}
