/**
 * A LoRA adapter: for each adapted linear layer y = x·Wᵀ (+ b), the low-rank update
 * y += s · (dropout(x)·Aᵀ)·Bᵀ with A [r, in], B [out, r] and s = alpha / r (alpha / √r with
 * rsLoRA), as PEFT's LoraLayer computes it. A starts as PEFT's (and nn.Linear's) Kaiming-uniform
 * draw, B at zero, so a fresh adapter leaves the model's outputs unchanged. Dropout applies only
 * inside {@link LoraAdapter.training}, with masks drawn from the stream given there (the run's,
 * saved in checkpoints, so a resumed run draws the same masks).
 */
import { dropoutMask, loraLinear, RngStream, tf, variableFrom, type HostTensor, type RngState } from "@pbrl/core-tensor";
import { matMul } from "../ops.js";
import { loraScaling, type LoraSettings } from "./settings.js";

/** One adapted layer's factors and scale. */
export interface LoraModule {
  a: tf.Variable;
  b: tf.Variable;
  scaling: number;
}

/** What an adapter was made with, as adapter_config.json records it. */
export interface LoraSpec {
  r: number;
  alpha: number;
  dropout: number;
  useRslora: boolean;
  /** Adapted modules ("model.layers.0.self_attn.q_proj"), in the model's order. */
  modules: readonly string[];
  /** PEFT's per-module overrides (rank_pattern / alpha_pattern), when an adapter was saved with them. */
  rankPattern?: Readonly<Record<string, number>>;
  alphaPattern?: Readonly<Record<string, number>>;
}

let nextAdapterId = 0;

/** The names PEFT gives an adapted module's factors inside the model ("….q_proj.lora_A.weight"). */
export const loraWeightNames = (module: string): { a: string; b: string } => ({ a: `${module}.lora_A.weight`, b: `${module}.lora_B.weight` });

export class LoraAdapter {
  readonly modules: ReadonlyMap<string, LoraModule>;
  private readonly id = nextAdapterId++;
  private dropoutRng: RngStream | undefined;
  private disposed = false;

  private constructor(
    readonly spec: LoraSpec,
    modules: Map<string, { a: tf.Tensor; b: tf.Tensor; scaling: number }>,
  ) {
    const own = new Map<string, LoraModule>();
    for (const [m, f] of modules) {
      const names = loraWeightNames(m);
      own.set(m, { a: variableFrom(f.a, true, `lora${this.id}/${names.a}`), b: variableFrom(f.b, true, `lora${this.id}/${names.b}`), scaling: f.scaling });
    }
    this.modules = own;
  }

  /**
   * A fresh adapter on `modules` of a model whose linear layers have the given [out, in] shapes:
   * A ~ U(−1/√in, 1/√in) (kaiming_uniform_ with a = √5, PEFT's init), B = 0.
   */
  static init(settings: LoraSettings, modules: readonly string[], shapes: (module: string) => readonly [number, number], rng: RngStream): LoraAdapter {
    const scaling = loraScaling(settings);
    const made = new Map<string, { a: tf.Tensor; b: tf.Tensor; scaling: number }>();
    for (const m of modules) {
      const [out, inp] = shapes(m);
      const bound = 1 / Math.sqrt(inp);
      const a = new Float32Array(settings.r * inp);
      for (let i = 0; i < a.length; i++) a[i] = (2 * rng.random() - 1) * bound;
      made.set(m, { a: tf.tensor2d(a, [settings.r, inp]), b: tf.zeros([out, settings.r]), scaling });
    }
    return new LoraAdapter({ r: settings.r, alpha: settings.alpha, dropout: settings.dropout, useRslora: settings.useRslora, modules: [...modules] }, made);
  }

  /** An adapter from host factors (a loaded adapter_model.safetensors), each module's scale given. */
  static fromHost(spec: LoraSpec, factors: ReadonlyMap<string, { a: HostTensor; b: HostTensor; scaling: number }>): LoraAdapter {
    const made = new Map<string, { a: tf.Tensor; b: tf.Tensor; scaling: number }>();
    for (const m of spec.modules) {
      const f = factors.get(m);
      if (f === undefined) throw new Error(`LoRA adapter: no factors for ${m}`);
      made.set(m, { a: tf.tensor(f.a.data, f.a.shape, "float32"), b: tf.tensor(f.b.data, f.b.shape, "float32"), scaling: f.scaling });
    }
    return new LoraAdapter(spec, made);
  }

  /** Whether `module` ("model.layers.0.self_attn.q_proj") is adapted. */
  covers(module: string): boolean {
    return this.modules.has(module);
  }

  /**
   * The adapted layer `module` on x [N, in]: x·Wᵀ (+ bias) + s · (dropout(x)·Aᵀ)·Bᵀ for its frozen
   * weight W and bias, as one fused kernel each way. Only where loraLinearFused() (libtorch);
   * elsewhere the model adds {@link update} to its own product.
   */
  linear(x: tf.Tensor2D, weight: tf.Tensor2D, bias: tf.Tensor1D | undefined, module: string): tf.Tensor2D {
    const f = this.modules.get(module)!;
    return loraLinear(x, weight, bias, f.a as tf.Tensor2D, f.b as tf.Tensor2D, f.scaling, this.dropout());
  }

  /** y + s · (dropout(x)·Aᵀ)·Bᵀ: the output y [N, out] of the adapted layer `module` on x [N, in] with the update added, as tfjs ops. */
  update(y: tf.Tensor2D, x: tf.Tensor2D, module: string): tf.Tensor2D {
    return tf.add(y, this.delta(x, module)) as tf.Tensor2D;
  }

  /** Dropout's stream and rate inside {@link training} (PEFT's train mode), else none. */
  private dropout(): { rng: RngStream; p: number } | undefined {
    return this.dropoutRng !== undefined && this.spec.dropout > 0 ? { rng: this.dropoutRng, p: this.spec.dropout } : undefined;
  }

  /** s · (dropout(x)·Aᵀ)·Bᵀ for the adapted layer `module`, x [N, in] → [N, out], as tfjs ops. */
  private delta(x: tf.Tensor2D, module: string): tf.Tensor2D {
    const f = this.modules.get(module)!;
    const dropout = this.dropout();
    const input = dropout !== undefined ? tf.mul(x, dropoutMask(dropout.rng, x.shape, dropout.p)) : x;
    // Scaled at rank r, not at the output's width (PEFT scales the output: the same up to rounding).
    const low = tf.mul(matMul(input, f.a as tf.Tensor2D, false, true), f.scaling) as tf.Tensor2D;
    return matMul(low, f.b as tf.Tensor2D, false, true) as tf.Tensor2D;
  }

  /** Where the dropout stream is now (undefined outside training): a recomputation replays its masks from here. */
  dropoutState(): RngState | undefined {
    return this.dropoutRng?.getState();
  }

  /** Runs `fn` with dropout drawing from a copy of the stream at `state`, the masks of an earlier pass, leaving the stream itself where it is. */
  replaying<T>(state: RngState, fn: () => T): T {
    return this.training(RngStream.fromState(state), fn);
  }

  /** Runs `fn` (a training forward pass) with dropout drawing its masks from `rng`. */
  training<T>(rng: RngStream, fn: () => T): T {
    const before = this.dropoutRng;
    this.dropoutRng = rng;
    try {
      return fn();
    } finally {
      this.dropoutRng = before;
    }
  }

  /** The factors, A and B of each module in turn. */
  variables(): tf.Variable[] {
    return [...this.modules.values()].flatMap((f) => [f.a, f.b]);
  }

  /** The factors keyed by their names inside the model ("….q_proj.lora_A.weight"). */
  namedVariables(): Map<string, tf.Variable> {
    const out = new Map<string, tf.Variable>();
    for (const [m, f] of this.modules) {
      const names = loraWeightNames(m);
      out.set(names.a, f.a);
      out.set(names.b, f.b);
    }
    return out;
  }

  /** Host copies of the factors, keyed as {@link namedVariables}. */
  hostWeights(): Map<string, HostTensor> {
    const out = new Map<string, HostTensor>();
    for (const [name, v] of this.namedVariables())
      out.set(name, { dtype: "float32", shape: [...v.shape], data: Float32Array.from(v.dataSync() as Float32Array) });
    return out;
  }

  /** Overwrites the factors with host copies keyed as {@link namedVariables}; names and shapes are checked first. */
  assignHostWeights(host: ReadonlyMap<string, HostTensor>, source: string): void {
    const named = this.namedVariables();
    for (const [name, v] of named) {
      const t = host.get(name);
      if (t === undefined || t.shape.join() !== v.shape.join()) throw new Error(`${source}: LoRA factor "${name}" is missing or is not of shape [${v.shape}]`);
    }
    for (const [name, v] of named) tf.tidy(() => v.assign(tf.tensor(host.get(name)!.data, v.shape, "float32")));
  }

  /** An independent copy of the factors, made by `copy` (a clone, or a copy to another device). */
  clone(copy: (t: tf.Tensor) => tf.Tensor = (t) => tf.clone(t)): LoraAdapter {
    const made = new Map<string, { a: tf.Tensor; b: tf.Tensor; scaling: number }>();
    for (const [m, f] of this.modules) made.set(m, { a: copy(f.a), b: copy(f.b), scaling: f.scaling });
    return new LoraAdapter(this.spec, made);
  }

  /** The merged weight W + s·B·A of one module, for writing a full checkpoint. */
  merged(module: string, weight: tf.Tensor2D): tf.Tensor2D {
    const f = this.modules.get(module)!;
    return tf.tidy(() => tf.add(weight, tf.mul(tf.matMul(f.b, f.a), f.scaling)) as tf.Tensor2D);
  }

  /** Whether the update is zero everywhere (every B is zero, as a fresh adapter's): the model computes as its base. */
  isIdentity(): boolean {
    return [...this.modules.values()].every((f) => tf.tidy(() => tf.max(tf.abs(f.b)).dataSync()[0]!) === 0);
  }

  numParameters(): number {
    return this.variables().reduce((n, v) => n + v.size, 0);
  }

  dispose(): void {
    if (this.disposed) return;
    for (const v of this.variables()) v.dispose();
    this.disposed = true;
  }
}

/** A module's scale under PEFT's rank/alpha patterns: the first pattern key the module name ends with wins. */
export function moduleScaling(
  spec: Pick<LoraSpec, "r" | "alpha" | "useRslora" | "rankPattern" | "alphaPattern">,
  module: string,
): { r: number; scaling: number } {
  const pick = (pattern: Readonly<Record<string, number>> | undefined, fallback: number): number => {
    for (const [key, value] of Object.entries(pattern ?? {})) if (new RegExp(`^(.*\\.)?(${key})$`).test(module)) return value;
    return fallback;
  };
  const r = pick(spec.rankPattern, spec.r);
  const alpha = pick(spec.alphaPattern, spec.alpha);
  return { r, scaling: loraScaling({ r, alpha, useRslora: spec.useRslora }) };
}
