import type { RngStream } from "@pbrl/core-tensor";
import {
  deviceOf,
  loraLinearFused,
  onDevice,
  storeInBf16,
  tf,
  toDevice,
  transposesAreFree,
  variableFrom,
  type DeferredHostTensor,
  type HostTensor,
} from "@pbrl/core-tensor";
import { CausalAttention } from "./attention.js";
import { type CausalLMConfig } from "./config.js";
import { decoderLayer, norm, type BlockWeights, type CallConstants, type RotaryTables } from "./decoder-layer.js";
import { fusedDecodeSupport, type DecodeWeights, type FusedDecodeSupport } from "./fused-decode.js";
import { gatherRows, matMul } from "./ops.js";
import { checkFiniteWeight } from "./finite-weights.js";
import { LoraAdapter } from "./lora/adapter.js";
import { loraTargets, type LoraSettings } from "./lora/settings.js";
import { isIgnorableCheckpointEntry, parameterSpecs, type ParameterSpec } from "./parameters.js";
import { RotaryEmbedding } from "./rope.js";
import { WeightLoadError } from "./weight-load-error.js";

export { WeightLoadError };

/** Keys and values of earlier positions, per layer, shaped [B, kvHeads, past, headDim]. */
export interface KVCache {
  layers: { k: tf.Tensor4D; v: tf.Tensor4D }[];
  length: number;
}

export interface ForwardInput {
  /** Token ids, row-major [batch, length]. */
  ids: Int32Array;
  batch: number;
  length: number;
  /** Rotary positions [batch, length]; default cache.length + 0..length-1 for every row. */
  positions?: Int32Array;
  /** [batch, cache.length + length]: 1 where a key is a real token, 0 for padding. Default: all real. */
  keyMask?: ArrayLike<number>;
  /** Attention state of earlier positions; extended in place with this call's keys and values. */
  cache?: KVCache;
  /**
   * Each row's real length, padding excluded (scoring passes it). Only longrope (Phi-3) reads it:
   * it then picks short or long factors per row, as if each sequence ran alone, so a sequence
   * scores the same in any batch. Without it the call picks once, by its largest position, as
   * transformers' forward and generate do.
   */
  sequenceLengths?: ArrayLike<number>;
}

let nextModelId = 0;

/**
 * A model's frozen-or-not weights, shared by every LoRA view of them (agents, comparator copies,
 * the KL reference, which is the base with no adapter): freed when the last view is disposed.
 * Copies on other devices are made once per device and shared the same way.
 */
class SharedWeights {
  private refs = 1;
  private readonly copies = new Map<string, SharedWeights>();

  constructor(
    readonly params: Map<string, tf.Variable>,
    private readonly onRelease: () => void = () => {},
  ) {}

  retain(): this {
    this.refs++;
    return this;
  }

  release(): void {
    if (--this.refs > 0) return;
    for (const v of this.params.values()) v.dispose();
    this.onRelease();
  }

  /** These weights on `device`, copied the first time a view asks and shared after that (retained for the caller). */
  onDevice(device: string, name: (weight: string) => string): SharedWeights {
    const have = this.copies.get(device);
    if (have !== undefined) return have.retain();
    const params = new Map<string, tf.Variable>();
    for (const [n, v] of this.params) params.set(n, variableFrom(toDevice(v, device), v.trainable, name(n)));
    const copy = new SharedWeights(params, () => this.copies.delete(device));
    this.copies.set(device, copy);
    return copy;
  }
}

/**
 * A causal language model of one of the supported families (families.ts) on TensorFlow.js,
 * computing in float32 with the same operation order as transformers' eager implementation.
 * Weights are tf.Variables keyed by their Hugging Face names.
 */
export class CausalLM {
  /** Every weight by its Hugging Face name: the base's, then a LoRA adapter's factors ("….q_proj.lora_A.weight"). */
  readonly params: Map<string, tf.Variable>;
  /** The checkpoint (folder or hub id) the base weights were loaded from, when known: a saved adapter's base_model_name_or_path. */
  origin: string | undefined;
  /** gradient_checkpointing: training passes ({@link training}) recompute each decoder layer in the backward pass. */
  gradientCheckpointing = false;
  /** Inside {@link training}: what to release once its backward pass is over. */
  private trainingPass: (() => void)[] | undefined;
  /** The stream a LoRA adapter's dropout draws its masks from in {@link training} passes (the run's, saved in checkpoints); undefined: no dropout. */
  dropoutStream: RngStream | undefined;
  /** The LoRA adapter this view adds to its (frozen, shared) base weights; undefined for a plain model. */
  readonly adapter: LoraAdapter | undefined;
  private readonly base: SharedWeights;
  /** tf variable name → weight name, for gradients keyed by variable. */
  private readonly weightNames: Map<string, string>;
  private readonly rope: RotaryEmbedding;
  private readonly localRope: RotaryEmbedding | undefined;
  private readonly id = nextModelId++;
  private disposed = false;
  private transposed: Map<string, tf.Tensor> | undefined;
  private readonly blockWeights: BlockWeights = { get: (name) => this.w(name), linear: (x, prefix, bias) => this.linear(x, prefix, bias) };

  private constructor(
    readonly config: CausalLMConfig,
    weights: Map<string, tf.Tensor> | { shared: SharedWeights; adapter: LoraAdapter | undefined },
  ) {
    this.rope = new RotaryEmbedding({ theta: config.ropeTheta, scaling: config.ropeScaling }, config.rotaryDim);
    this.localRope = config.localRope === undefined ? undefined : new RotaryEmbedding(config.localRope, config.rotaryDim);
    if (weights instanceof Map) {
      const own = new Map<string, tf.Variable>();
      for (const [name, t] of weights) own.set(name, variableFrom(t, true, `m${this.id}/${name}`));
      this.base = new SharedWeights(own);
      this.adapter = undefined;
    } else {
      this.base = weights.shared;
      this.adapter = weights.adapter;
    }
    this.origin = undefined;
    this.dropoutStream = undefined;
    this.params = this.adapter === undefined ? this.base.params : new Map([...this.base.params, ...this.adapter.namedVariables()]);
    this.weightNames = new Map([...this.params].map(([name, v]) => [v.name, name]));
  }

  /** Builds the model from host tensors (a loaded checkpoint). Names, shapes and finiteness are checked. */
  static fromHostWeights(config: CausalLMConfig, host: ReadonlyMap<string, HostTensor>, source = "checkpoint"): CausalLM {
    const specs = parameterSpecs(config);
    const wanted = new Set(specs.map((s) => s.name));
    const missing = specs.filter((s) => !host.has(s.name)).map((s) => s.name);
    const unexpected = [...host.keys()].filter((n) => !wanted.has(n) && !isIgnorableCheckpointEntry(n, config));
    if (missing.length > 0 || unexpected.length > 0) {
      const list = (xs: string[]) => xs.slice(0, 6).join(", ") + (xs.length > 6 ? `, … (${xs.length} in all)` : "");
      throw new WeightLoadError(
        `${source}: weights do not match a ${config.modelType} model of this config` +
          (missing.length > 0 ? `; missing: ${list(missing)}` : "") +
          (unexpected.length > 0 ? `; unexpected: ${list(unexpected)}` : ""),
      );
    }
    const weights = new Map<string, tf.Tensor>();
    for (const spec of specs) {
      const t = host.get(spec.name)!;
      try {
        if (t.dtype !== "float32" || t.shape.join() !== spec.shape.join()) {
          throw new WeightLoadError(`${source}: "${spec.name}" has ${t.dtype} shape [${t.shape}], expected float shape [${spec.shape}]`);
        }
        // Here rather than in a pass of its own: `host` may make each tensor when asked (the bench's lazy weights).
        checkFiniteWeight(spec.name, t, source);
      } catch (err) {
        for (const w of weights.values()) w.dispose();
        throw err;
      }
      weights.set(spec.name, tf.tensor(t.data, spec.shape, "float32"));
    }
    return new CausalLM(config, weights);
  }

  /**
   * Fresh weights as transformers initialises them: normal(0, initializer_range) for linears
   * and embeddings, ones for norms (zeros for Gemma's 1 + weight norms), zeros for biases; drawn
   * from `rng`.
   */
  static randomInit(config: CausalLMConfig, rng: RngStream): CausalLM {
    const std = typeof config.raw["initializer_range"] === "number" ? (config.raw["initializer_range"] as number) : 0.02;
    const weights = new Map<string, tf.Tensor>();
    for (const spec of parameterSpecs(config)) weights.set(spec.name, tf.tensor(initValues(spec, std, rng), spec.shape, "float32"));
    return new CausalLM(config, weights);
  }

  private w(name: string): tf.Variable {
    const v = this.params.get(name);
    if (v === undefined) throw new Error(`model has no weight "${name}"`);
    return v;
  }

  /** x · Wᵀ for a [out, in] weight, from the transposed copy while inference weights are frozen. */
  private project(x: tf.Tensor2D, weight: string): tf.Tensor2D {
    const frozen = this.transposed?.get(weight);
    return (frozen !== undefined ? tf.matMul(x, frozen) : matMul(x, this.w(weight), false, true)) as tf.Tensor2D;
  }

  /**
   * Runs `fn` with transposed copies of the projection weights, made once: for many small
   * forward passes without gradients (token-by-token generation) this saves a transpose per
   * weight per step. The weights must not change inside `fn`. Not on native and libtorch, whose
   * matmuls read transposed operands for free.
   */
  withFrozenWeights<T>(fn: () => T): T {
    if (this.transposed !== undefined || transposesAreFree()) return fn();
    const c = this.config;
    const names = [...this.params.keys()].filter((n) => n.endsWith("_proj.weight"));
    names.push(c.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    this.transposed = new Map(names.map((n) => [n, tf.transpose(this.w(n))]));
    try {
      return fn();
    } finally {
      for (const t of this.transposed.values()) t.dispose();
      this.transposed = undefined;
    }
  }

  private linear(x: tf.Tensor2D, prefix: string, bias: boolean): tf.Tensor2D {
    const adapted = this.adapter?.covers(prefix) === true;
    if (adapted && loraLinearFused())
      return this.adapter!.linear(x, this.w(`${prefix}.weight`) as tf.Tensor2D, bias ? (this.w(`${prefix}.bias`) as tf.Tensor1D) : undefined, prefix);
    let y = this.project(x, `${prefix}.weight`);
    if (bias) y = tf.add(y, this.w(`${prefix}.bias`)) as tf.Tensor2D;
    // PEFT's order: the base layer's output (bias included), then the low-rank update.
    return adapted ? this.adapter!.update(y, x, prefix) : y;
  }

  /**
   * A LoRA view of this model: its weights, frozen and shared (not copied), plus a fresh adapter
   * on the modules `settings` names (PEFT's init: the outputs do not change until it trains).
   * Freezes this model's weights for every view of them.
   */
  withLora(settings: LoraSettings, rng: RngStream): CausalLM {
    const modules = loraTargets(this.config, settings.targetModules);
    const adapter = onDevice(this.device(), () => LoraAdapter.init(settings, modules, (m) => this.w(`${m}.weight`).shape as [number, number], rng));
    return this.withAdapter(adapter);
  }

  /** A view of this model's (frozen, shared) weights with `adapter` added; the view owns the adapter. */
  withAdapter(adapter: LoraAdapter): CausalLM {
    if (this.adapter !== undefined) throw new Error("withAdapter: this model already has a LoRA adapter; take baseModel() first");
    for (const m of adapter.spec.modules) {
      const w = this.params.get(`${m}.weight`);
      const f = adapter.modules.get(m)!;
      if (w === undefined || f.a.shape[1] !== w.shape[1] || f.b.shape[0] !== w.shape[0])
        throw new WeightLoadError(
          `LoRA adapter: module ${m} ${w === undefined ? "is not a linear layer of this model" : `does not fit its weight [${w.shape}]`}`,
        );
    }
    for (const v of this.base.params.values()) v.trainable = false;
    // A frozen base never changes: under bf16 it is held in bfloat16 alone, as the products read it.
    storeInBf16([...this.base.params.values()]);
    return this.view(this.base.retain(), adapter);
  }

  private view(shared: SharedWeights, adapter: LoraAdapter | undefined): CausalLM {
    const m = new CausalLM(this.config, { shared, adapter });
    m.origin = this.origin;
    return m;
  }

  /**
   * Runs `fn`, a forward pass that trains (with its backward pass, as tf.variableGrads runs both): a
   * LoRA adapter applies its dropout there (PEFT's train mode), and with {@link gradientCheckpointing}
   * each decoder layer is recomputed in the backward pass instead of keeping its activations.
   */
  training<T>(fn: () => T): T {
    if (this.trainingPass !== undefined) return fn();
    const pass: (() => void)[] = [];
    this.trainingPass = pass;
    try {
      return this.adapter !== undefined && this.dropoutStream !== undefined ? this.adapter.training(this.dropoutStream, fn) : fn();
    } finally {
      this.trainingPass = undefined;
      for (const release of pass) release();
    }
  }

  /**
   * Decoder layer `i` on h as one op whose backward pass recomputes the layer (with the dropout
   * masks of the forward pass: its stream's state is replayed) and takes the layer's gradient with
   * respect to h and its trainable weights; the forward pass keeps only h.
   */
  private recomputedLayer(k: CallConstants, i: number, h: tf.Tensor2D): tf.Tensor2D {
    const prefix = `model.layers.${i}.`;
    const vars = [...this.params].filter(([name, v]) => name.startsWith(prefix) && v.trainable).map(([, v]) => v);
    const dropout = this.adapter !== undefined && this.adapter.spec.dropout > 0 ? this.adapter.dropoutState() : undefined;
    const layer = (x: tf.Tensor2D) => decoderLayer(this.config, this.blockWeights, k, i, x, undefined).h;
    const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const x = args[0] as tf.Tensor2D;
      const save = args[args.length - 1] as tf.GradSaveFunc;
      save([x]);
      const value = layer(x);
      const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
        const hv = tf.variable(saved[0]!, true);
        const run = () => tf.variableGrads(() => tf.sum(tf.mul(layer(hv as tf.Tensor2D), dy)) as tf.Scalar, [hv, ...vars]);
        const { value: dot, grads } = dropout !== undefined ? this.adapter!.replaying(dropout, run) : run();
        dot.dispose();
        const out = [grads[hv.name]!, ...vars.map((v) => grads[v.name]!)];
        hv.dispose();
        return out;
      };
      return { value, gradFunc };
    });
    return op(h, ...vars) as tf.Tensor2D;
  }

  /** The base weights with no adapter (the frozen reference of a LoRA agent), shared, not copied. */
  baseModel(): CausalLM {
    return this.view(this.base.retain(), undefined);
  }

  /** Whether two models read the very same base weights (LoRA views of one base). */
  sharesBaseWith(other: CausalLM): boolean {
    return this.base === other.base;
  }

  /**
   * The weights core-tensor's fused decoders (nativeDecodeStep, LibtorchDecoder) read, by role.
   * Only for a Llama-layout model: see {@link fusedDecodeSupport}, which says why not otherwise.
   */
  decodeWeights(): DecodeWeights {
    const c = this.config;
    const support = this.fusedDecodeSupport();
    if (!support.ok) throw new Error(`decodeWeights: the fused decoders cannot run this ${c.modelType} model: ${support.reason}`);
    const opt = (name: string, present: boolean): tf.Variable | undefined => (present ? this.w(name) : undefined);
    return {
      embed: this.w("model.embed_tokens.weight"),
      finalNorm: this.w("model.norm.weight"),
      lmHead: this.lmHeadWeight(),
      layers: Array.from({ length: c.numLayers }, (_, i) => {
        const p = `model.layers.${i}`;
        return {
          inputNorm: this.w(`${p}.input_layernorm.weight`),
          q: this.w(`${p}.self_attn.q_proj.weight`),
          k: this.w(`${p}.self_attn.k_proj.weight`),
          v: this.w(`${p}.self_attn.v_proj.weight`),
          o: this.w(`${p}.self_attn.o_proj.weight`),
          qBias: opt(`${p}.self_attn.q_proj.bias`, c.qkvBias),
          kBias: opt(`${p}.self_attn.k_proj.bias`, c.qkvBias),
          vBias: opt(`${p}.self_attn.v_proj.bias`, c.qkvBias),
          oBias: opt(`${p}.self_attn.o_proj.bias`, c.oBias),
          postNorm: this.w(`${p}.post_attention_layernorm.weight`),
          gate: this.w(`${p}.mlp.gate_proj.weight`),
          up: this.w(`${p}.mlp.up_proj.weight`),
          down: this.w(`${p}.mlp.down_proj.weight`),
          gateBias: opt(`${p}.mlp.gate_proj.bias`, c.mlpBias),
          upBias: opt(`${p}.mlp.up_proj.bias`, c.mlpBias),
          downBias: opt(`${p}.mlp.down_proj.bias`, c.mlpBias),
        };
      }),
    };
  }

  /** Rotary cos and sin tables [positions, rotary_dim] of the given positions (the global layers' embedding). */
  rotaryTables(positions: ArrayLike<number>): { cos: Float32Array; sin: Float32Array } {
    return this.rope.tables(positions);
  }

  /** Final hidden states (after the last norm), shape [batch·length, hidden]. */
  hidden(input: ForwardInput): tf.Tensor2D {
    if (this.disposed) throw new Error("this model has been disposed");
    const c = this.config;
    const { batch: b, length: t } = input;
    if (input.ids.length !== b * t) throw new RangeError(`ids has ${input.ids.length} entries, expected ${b}×${t}`);
    for (const id of input.ids) if (id < 0 || id >= c.vocabSize) throw new RangeError(`token id ${id} outside the vocabulary [0, ${c.vocabSize})`);
    const past = input.cache?.length ?? 0;
    const positions = input.positions ?? defaultPositions(b, t, past);
    if (input.sequenceLengths !== undefined && input.sequenceLengths.length !== b)
      throw new RangeError(`sequenceLengths has ${input.sequenceLengths.length} entries for a batch of ${b}`);
    // Constants built outside any tape: rotary tables and attention masks.
    const k = this.callConstants(b, t, past, positions, input.keyMask, input.sequenceLengths);
    const newCache: { k: tf.Tensor4D; v: tf.Tensor4D }[] = [];
    // gradient_checkpointing: in a training pass, each layer keeps only its input for the backward
    // pass, which recomputes the layer; its call constants must live until then.
    const checkpoint = this.gradientCheckpointing && this.trainingPass !== undefined && input.cache === undefined;
    if (checkpoint) keepCallConstants(k);
    const out = tf.tidy(() => {
      let h = gatherRows(this.w("model.embed_tokens.weight") as tf.Tensor2D, input.ids);
      if (c.arch.embedScale !== undefined) h = tf.mul(h, c.arch.embedScale);
      for (let i = 0; i < c.numLayers; i++) {
        if (checkpoint) {
          h = this.recomputedLayer(k, i, h);
          continue;
        }
        // A layer's intermediates are freed when it is done (what a backward pass needs, the tape
        // keeps): a forward pass through tfjs ops (a LoRA model generating) otherwise holds every
        // layer's at once — 0.6 GB over the weights for a Qwen2.5-0.5B prompt pass of 8 × 16 tokens.
        const layerInput = h;
        h = tf.tidy(() => {
          const layer = decoderLayer(c, this.blockWeights, k, i, layerInput, input.cache?.layers[i]);
          if (input.cache !== undefined) newCache.push({ k: tf.keep(layer.k), v: tf.keep(layer.v) });
          return layer.h;
        });
      }
      return norm(c, this.blockWeights, h, "model.norm.weight");
    });
    if (checkpoint) this.trainingPass!.push(() => disposeCallConstants(k));
    else disposeCallConstants(k);
    if (input.cache !== undefined) {
      for (const l of input.cache.layers) tf.dispose([l.k, l.v]);
      input.cache.layers = newCache;
      input.cache.length = past + t;
    }
    return out;
  }

  /** Rotary tables and one attention (mask) per distinct layer window, for one forward call. */
  private callConstants(
    b: number,
    t: number,
    past: number,
    positions: Int32Array,
    keyMask: ArrayLike<number> | undefined,
    lengths: ArrayLike<number> | undefined,
  ): CallConstants {
    const c = this.config;
    const tables = (rope: RotaryEmbedding): RotaryTables => {
      const { cos, sin } = rope.tables(positions, lengths);
      return { cos: tf.tensor4d(cos, [b, 1, t, c.rotaryDim]), sin: tf.tensor4d(sin, [b, 1, t, c.rotaryDim]) };
    };
    const byWindow = new Map<number | undefined, CausalAttention>();
    const attention = c.layers.map((layer) => {
      let a = byWindow.get(layer.window);
      if (a === undefined) {
        a = new CausalAttention({
          batch: b,
          queries: t,
          past,
          heads: c.numHeads,
          kvHeads: c.numKvHeads,
          headDim: c.headDim,
          scale: c.arch.attentionScale,
          ...(keyMask !== undefined ? { keyMask } : {}),
          ...(layer.window !== undefined ? { window: layer.window } : {}),
        });
        byWindow.set(layer.window, a);
      }
      return a;
    });
    const usesLocal = c.layers.some((l) => l.rope === "local");
    return { batch: b, length: t, rotary: { global: tables(this.rope), local: usesLocal ? tables(this.localRope!) : undefined }, attention };
  }

  /** The output projection: the embedding matrix when tied, else lm_head. Shape [vocab, hidden]. */
  lmHeadWeight(): tf.Variable {
    return this.w(this.config.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  }

  /** Logits for hidden states [N, hidden] → [N, vocab], soft-capped when the family says so (Gemma's final_logit_softcapping). */
  logits(hidden: tf.Tensor2D): tf.Tensor2D {
    const weight = this.config.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    const cap = this.config.arch.finalLogitSoftcap;
    if (cap === undefined) return this.project(hidden, weight);
    return tf.tidy(() => tf.mul(tf.tanh(tf.div(this.project(hidden, weight), cap)), cap) as tf.Tensor2D);
  }

  /** Logits for every position, [batch·length, vocab]. */
  forward(input: ForwardInput): tf.Tensor2D {
    return tf.tidy(() => this.logits(this.hidden(input)));
  }

  /** Whether core-tensor's fused decoders can run this model: the family's layout, and no adapter (they read the base weights only). */
  fusedDecodeSupport(): FusedDecodeSupport {
    if (this.adapter !== undefined) return { ok: false, reason: "a LoRA adapter" };
    return fusedDecodeSupport(this.config);
  }

  /** The weights training updates: all of them, or a LoRA view's adapter factors (its base is frozen). */
  trainableVariables(): tf.Variable[] {
    return [...this.params.values()].filter((v) => v.trainable);
  }

  /** Maps gradients keyed by tf variable names (as variableGrads returns them) to weight names. */
  gradsByWeightName(grads: tf.NamedTensorMap): Map<string, tf.Tensor> {
    const out = new Map<string, tf.Tensor>();
    for (const [varName, g] of Object.entries(grads)) {
      const name = this.weightNames.get(varName);
      if (name === undefined) throw new Error(`gradient for "${varName}" does not belong to this model`);
      out.set(name, g);
    }
    return out;
  }

  /**
   * Host copies of the weights this model trains, in Hugging Face naming and layout: every weight,
   * or a LoRA view's adapter factors only ("….q_proj.lora_A.weight"; the base is the checkpoint's).
   */
  hostWeights(): Map<string, HostTensor> {
    if (this.adapter !== undefined) return this.adapter.hostWeights();
    const out = new Map<string, HostTensor>();
    for (const [name, v] of this.params) out.set(name, { dtype: "float32", shape: [...v.shape], data: Float32Array.from(v.dataSync() as Float32Array) });
    return out;
  }

  /**
   * Every weight of the model as it computes, a LoRA adapter merged in (W + s·B·A): a full
   * checkpoint's weights, each read from the backend only when it is written (a model's weights
   * are never all copied to host memory at once).
   */
  weightsToSave(): Map<string, DeferredHostTensor> {
    const out = new Map<string, DeferredHostTensor>();
    for (const [name, v] of this.base.params) {
      const module = name.slice(0, -".weight".length);
      const merged = this.adapter?.covers(module) === true && name.endsWith(".weight");
      const read = (): Float32Array => {
        if (!merged) return v.dataSync() as Float32Array;
        const t = this.adapter!.merged(module, v as tf.Tensor2D);
        const data = t.dataSync() as Float32Array;
        t.dispose();
        return data;
      };
      out.set(name, { dtype: "float32", shape: [...v.shape], read });
    }
    return out;
  }

  /**
   * A copy with the same config and weights, on `device` (default: where this one is): its own
   * variables for a plain model; for a LoRA view, its own adapter over the same base weights
   * (one copy of the base per device, shared).
   */
  clone(device?: string): CausalLM {
    if (this.adapter !== undefined) {
      const shared = device === undefined || device === this.device() ? this.base.retain() : this.base.onDevice(device, (n) => `m${nextModelId++}/${n}`);
      const adapter = this.adapter.clone(device === undefined ? undefined : (t) => toDevice(t, device));
      return this.view(shared, adapter);
    }
    const weights = new Map<string, tf.Tensor>();
    for (const [name, v] of this.params) weights.set(name, device === undefined ? tf.clone(v) : toDevice(v, device));
    return new CausalLM(this.config, weights);
  }

  /** Where the weights live ("cpu", "cuda:0", …; see core-tensor's devices). */
  device(): string {
    return deviceOf(this.params.values().next().value!);
  }

  /** Overwrites this model's weights with another's of the same config (a LoRA view: its adapter's factors). */
  copyWeightsFrom(other: CausalLM): void {
    const own = this.adapter?.namedVariables() ?? this.params;
    const theirs = other.adapter?.namedVariables() ?? other.params;
    for (const [name, v] of own) {
      const src = theirs.get(name);
      if (src === undefined || src.shape.join() !== v.shape.join()) throw new Error(`copyWeightsFrom: weight "${name}" is missing or differs in shape`);
      v.assign(src);
    }
  }

  /** Overwrites this model's weights with host copies (as {@link hostWeights} gives), every name and shape checked first. */
  assignHostWeights(host: ReadonlyMap<string, HostTensor>, source = "host weights"): void {
    if (this.adapter !== undefined) return this.adapter.assignHostWeights(host, source);
    for (const [name, v] of this.params) {
      const t = host.get(name);
      if (t === undefined || t.dtype !== "float32" || t.shape.join() !== v.shape.join()) {
        throw new WeightLoadError(`${source}: weight "${name}" is missing or is not float32 of shape [${v.shape}]`);
      }
    }
    for (const [name, v] of this.params) tf.tidy(() => v.assign(tf.tensor(host.get(name)!.data, v.shape, "float32")));
  }

  /** Number of scalar weights (a LoRA view: the base's and the adapter's). */
  numParameters(): number {
    let n = 0;
    for (const v of this.params.values()) n += v.size;
    return n;
  }

  /** Number of scalar weights training updates. */
  numTrainableParameters(): number {
    return this.trainableVariables().reduce((n, v) => n + v.size, 0);
  }

  /** Frees this view: its adapter, and the base weights once no other view reads them. */
  dispose(): void {
    if (this.disposed) return;
    this.adapter?.dispose();
    this.base.release();
    this.disposed = true;
  }
}

function defaultPositions(b: number, t: number, past: number): Int32Array {
  const out = new Int32Array(b * t);
  for (let r = 0; r < b; r++) for (let i = 0; i < t; i++) out[r * t + i] = past + i;
  return out;
}

function keepCallConstants(k: CallConstants): void {
  const { global, local } = k.rotary;
  for (const t of [global.cos, global.sin, ...(local !== undefined ? [local.cos, local.sin] : [])]) tf.keep(t);
  for (const a of new Set(k.attention)) a.keep();
}

function disposeCallConstants(k: CallConstants): void {
  const { global, local } = k.rotary;
  tf.dispose([global.cos, global.sin, ...(local !== undefined ? [local.cos, local.sin] : [])]);
  for (const a of new Set(k.attention)) a.dispose();
}

function initValues(spec: ParameterSpec, std: number, rng: RngStream): Float32Array {
  const n = spec.shape.reduce((a, x) => a * x, 1);
  const out = new Float32Array(n);
  if (spec.kind === "norm") out.fill(spec.normInit ?? 1);
  else if (spec.kind === "linear" || spec.kind === "embedding") for (let i = 0; i < n; i++) out[i] = rng.normal() * std;
  return out;
}

/** An empty cache to pass to `hidden()` for incremental decoding. */
export function emptyCache(): KVCache {
  return { layers: [], length: 0 };
}

export function disposeCache(cache: KVCache): void {
  for (const l of cache.layers) tf.dispose([l.k, l.v]);
  cache.layers = [];
  cache.length = 0;
}
