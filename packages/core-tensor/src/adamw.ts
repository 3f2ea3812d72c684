import { adamwStep } from "./fused-ops.js";
import { variableFrom } from "./memory.js";
import { makeBf16Copies } from "./precision.js";
import type { DeferredHostTensor } from "./safetensors.js";
import { tf } from "./tf.js";

export interface AdamWOptions {
  lr: number;
  betas?: [number, number];
  eps?: number;
  /** Decoupled weight decay, as torch.optim.AdamW (default 0.01). */
  weightDecay?: number;
}

/** A parameter set keyed by stable names (Hugging Face weight names for models). */
export type NamedVariables = ReadonlyMap<string, tf.Variable>;

/** Host copy of the optimizer state, for checkpoints. */
export interface AdamWState {
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  /** Per-parameter step count (a parameter without gradients does not advance, as in PyTorch). */
  steps: Record<string, number>;
  expAvg: Map<string, Float32Array>;
  expAvgSq: Map<string, Float32Array>;
}

/** {@link AdamWState} with each moment read when it is used (AdamW.deferredState). */
export interface AdamWDeferredState extends Omit<AdamWState, "expAvg" | "expAvgSq"> {
  expAvg: Map<string, DeferredHostTensor>;
  expAvgSq: Map<string, DeferredHostTensor>;
}

interface Slot {
  step: number;
  m: tf.Variable;
  v: tf.Variable;
}

/**
 * AdamW with PyTorch semantics (torch.optim.AdamW, amsgrad=False):
 *   p ← p − lr·λ·p
 *   m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
 *   p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + ε)
 */
export class AdamW {
  lr: number;
  readonly betas: [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private readonly slots = new Map<string, Slot>();

  constructor(
    private readonly params: NamedVariables,
    options: AdamWOptions,
  ) {
    this.lr = options.lr;
    this.betas = options.betas ?? [0.9, 0.999];
    this.eps = options.eps ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0.01;
    for (const [k, v] of Object.entries({ lr: this.lr, eps: this.eps, weightDecay: this.weightDecay })) {
      if (!Number.isFinite(v) || v < 0) throw new RangeError(`AdamW ${k} must be finite and ≥ 0, got ${v}`);
    }
    for (const b of this.betas) if (!(b >= 0 && b < 1)) throw new RangeError(`AdamW betas must be in [0, 1), got [${this.betas}]`);
    // The moments are made now, not at the first step as PyTorch does: made after the first
    // backward pass they take the memory its activations freed, and the second step's activations
    // then touch new pages (on libtorch, a SmolLM2-135M second step took 2.5–2.9 s instead of 1.4).
    // The weights' bfloat16 copies (bf16 on libtorch; the update rewrites them) likewise.
    this.makeSlots();
    makeBf16Copies([...this.params.values()].filter((p) => p.trainable));
  }

  private makeSlots(): void {
    for (const [name, p] of this.params) if (p.trainable) this.slot(name, p);
  }

  private slot(name: string, p: tf.Variable): Slot {
    let s = this.slots.get(name);
    if (s === undefined) {
      s = { step: 0, m: variableFrom(tf.zerosLike(p), false), v: variableFrom(tf.zerosLike(p), false) };
      this.slots.set(name, s);
    }
    return s;
  }

  /** Applies one update from gradients keyed by parameter name. Gradients are not disposed. */
  step(grads: ReadonlyMap<string, tf.Tensor>): void {
    const [b1, b2] = this.betas;
    for (const [name, g] of grads) {
      const p = this.params.get(name);
      if (p === undefined) throw new Error(`AdamW.step: gradient for unknown parameter "${name}"`);
      const s = this.slot(name, p);
      s.step += 1;
      const bc1 = 1 - b1 ** s.step;
      const bc2Sqrt = Math.sqrt(1 - b2 ** s.step);
      const [pNew, m, v] = adamwStep(p, g, s.m, s.v, { lr: this.lr, weightDecay: this.weightDecay, betas: this.betas, eps: this.eps, bc1, bc2Sqrt });
      s.m.assign(m);
      s.v.assign(v);
      p.assign(pNew);
      tf.dispose([pNew, m, v]);
    }
  }

  /**
   * The state for a checkpoint file, each moment read from the backend only when it is written:
   * a model's two moments are twice its weights, too much to copy to host memory at once.
   */
  deferredState(): AdamWDeferredState {
    const steps: Record<string, number> = {};
    const expAvg = new Map<string, DeferredHostTensor>();
    const expAvgSq = new Map<string, DeferredHostTensor>();
    const deferred = (v: tf.Variable): DeferredHostTensor => ({ dtype: "float32", shape: [v.size], read: () => v.dataSync() as Float32Array });
    for (const [name, s] of this.slots) {
      if (s.step === 0) continue; // no gradient yet: PyTorch has no state for it
      steps[name] = s.step;
      expAvg.set(name, deferred(s.m));
      expAvgSq.set(name, deferred(s.v));
    }
    return { lr: this.lr, betas: [...this.betas], eps: this.eps, weightDecay: this.weightDecay, steps, expAvg, expAvgSq };
  }

  /** Host copies of the moments and step counts. */
  getState(): AdamWState {
    const d = this.deferredState();
    const copies = (m: Map<string, DeferredHostTensor>) => new Map([...m].map(([name, t]) => [name, Float32Array.from(t.read() as Float32Array)]));
    return { ...d, expAvg: copies(d.expAvg), expAvgSq: copies(d.expAvgSq) };
  }

  /** Restores moments and step counts saved by `getState` (hyper-parameters stay as constructed, except lr). */
  setState(state: AdamWState): void {
    this.disposeSlots();
    this.lr = state.lr;
    for (const [name, step] of Object.entries(state.steps)) {
      const p = this.params.get(name);
      if (p === undefined) throw new Error(`AdamW state has parameter "${name}" that this optimizer does not train`);
      const m = state.expAvg.get(name);
      const v = state.expAvgSq.get(name);
      if (m === undefined || v === undefined || m.length !== p.size || v.length !== p.size) {
        throw new Error(`AdamW state for "${name}" is missing or has the wrong size (expected ${p.size} values)`);
      }
      this.slots.set(name, { step, m: variableFrom(tf.tensor(m, p.shape), false), v: variableFrom(tf.tensor(v, p.shape), false) });
    }
    this.makeSlots();
  }

  private disposeSlots(): void {
    for (const s of this.slots.values()) {
      s.m.dispose();
      s.v.dispose();
    }
    this.slots.clear();
  }

  dispose(): void {
    this.disposeSlots();
  }
}
