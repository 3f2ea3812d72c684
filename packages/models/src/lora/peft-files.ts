/**
 * LoRA adapters in PEFT's folder format, both ways: adapter_config.json (PeftConfig's fields) and
 * adapter_model.safetensors, whose tensors are named as PEFT saves them,
 *   base_model.model.<module>.lora_A.weight   [r, in]
 *   base_model.model.<module>.lora_B.weight   [out, r]
 * so `peft.PeftModel.from_pretrained(base, dir)` loads what pbrl saves and pbrl loads what PEFT
 * saves. Features of PEFT that change the computation and that pbrl does not implement (DoRA,
 * LoRA biases, modules_to_save, layer selection, …) are refused by name rather than ignored.
 */
import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { readSafetensors, writeFileAtomic, writeSafetensors, type HostTensor, type TensorToWrite } from "@pbrl/core-tensor";
import { WeightLoadError } from "../weight-load-error.js";
import { LoraAdapter, loraWeightNames, moduleScaling, type LoraSpec } from "./adapter.js";
import { decoderLinears, matchesTarget } from "./settings.js";
import type { CausalLMConfig } from "../config.js";

export const ADAPTER_CONFIG = "adapter_config.json";
export const ADAPTER_WEIGHTS = "adapter_model.safetensors";
const PREFIX = "base_model.model.";

/** What adapter_config.json says about an adapter, as pbrl uses it. */
export interface AdapterConfig {
  /** base_model_name_or_path: the checkpoint the adapter was trained on (a folder or a hub id), when recorded. */
  baseModel: string | undefined;
  r: number;
  alpha: number;
  dropout: number;
  useRslora: boolean;
  rankPattern: Record<string, number>;
  alphaPattern: Record<string, number>;
  /** The raw JSON, written back unchanged where pbrl has no opinion. */
  raw: Record<string, unknown>;
}

/** Whether `dir` is a PEFT adapter folder (it has adapter_config.json). */
export const isAdapterFolder = (dir: string): boolean => existsSync(path.join(dir, ADAPTER_CONFIG));

const numberRecord = (v: unknown): Record<string, number> =>
  v !== null && typeof v === "object" ? Object.fromEntries(Object.entries(v).filter((e): e is [string, number] => typeof e[1] === "number")) : {};

/** Fields whose non-default value changes what the adapter computes, and pbrl does not implement: the refusal names them. */
const UNSUPPORTED: [string, (v: unknown) => boolean, string][] = [
  ["use_dora", (v) => v === true, "DoRA"],
  ["lora_bias", (v) => v === true, "LoRA biases"],
  ["bias", (v) => v !== undefined && v !== null && v !== "none", "trained biases"],
  ["fan_in_fan_out", (v) => v === true, "fan_in_fan_out (Conv1D layers)"],
  ["modules_to_save", (v) => Array.isArray(v) && v.length > 0, "modules_to_save (fully trained extra modules)"],
  ["layers_to_transform", (v) => v !== undefined && v !== null, "layers_to_transform"],
  ["layer_replication", (v) => v !== undefined && v !== null, "layer_replication"],
  ["target_parameters", (v) => Array.isArray(v) && v.length > 0, "target_parameters"],
  ["trainable_token_indices", (v) => v !== undefined && v !== null, "trainable_token_indices"],
  ["alora_invocation_tokens", (v) => v !== undefined && v !== null, "aLoRA"],
  ["use_qalora", (v) => v === true, "QA-LoRA"],
];

export async function readAdapterConfig(dir: string): Promise<AdapterConfig> {
  const file = path.join(dir, ADAPTER_CONFIG);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new WeightLoadError(`${file} is not readable JSON: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new WeightLoadError(`${file} must hold a JSON object`);
  const type = raw["peft_type"];
  if (type !== "LORA") throw new WeightLoadError(`${file}: peft_type ${JSON.stringify(type)} is not supported; pbrl loads LoRA adapters (peft_type "LORA")`);
  const task = raw["task_type"];
  if (task !== undefined && task !== null && task !== "CAUSAL_LM")
    throw new WeightLoadError(`${file}: task_type ${JSON.stringify(task)}; pbrl loads adapters of causal language models (task_type "CAUSAL_LM")`);
  const unsupported = UNSUPPORTED.filter(([key, is]) => is(raw[key])).map(([key, , what]) => `${key} (${what})`);
  if (unsupported.length > 0)
    throw new WeightLoadError(`${file} uses ${unsupported.join(", ")}, which pbrl does not implement; merge the adapter with PEFT instead`);
  const r = raw["r"];
  const alpha = raw["lora_alpha"] ?? r;
  if (typeof r !== "number" || !Number.isInteger(r) || r < 1) throw new WeightLoadError(`${file}: r must be an integer ≥ 1, got ${JSON.stringify(r)}`);
  if (typeof alpha !== "number" || !Number.isFinite(alpha)) throw new WeightLoadError(`${file}: lora_alpha must be a number, got ${JSON.stringify(alpha)}`);
  const base = raw["base_model_name_or_path"];
  return {
    baseModel: typeof base === "string" && base !== "" ? base : undefined,
    r,
    alpha,
    dropout: typeof raw["lora_dropout"] === "number" ? raw["lora_dropout"] : 0,
    useRslora: raw["use_rslora"] === true,
    rankPattern: numberRecord(raw["rank_pattern"]),
    alphaPattern: numberRecord(raw["alpha_pattern"]),
    raw,
  };
}

/**
 * Reads an adapter folder's factors for a model of `config`. The adapted modules are the ones its
 * tensors name (PEFT saves exactly those); each module's rank and scale follow r, lora_alpha and
 * the rank/alpha patterns, and every shape is checked against the model's weight.
 */
export async function loadAdapter(dir: string, config: CausalLMConfig, weightShape: (module: string) => readonly number[] | undefined): Promise<LoraAdapter> {
  const cfg = await readAdapterConfig(dir);
  const file = path.join(dir, ADAPTER_WEIGHTS);
  if (!existsSync(file)) {
    const bin = existsSync(path.join(dir, "adapter_model.bin"));
    throw new WeightLoadError(
      `${dir} has no ${ADAPTER_WEIGHTS}${bin ? " (only adapter_model.bin, a pickle pbrl does not read: save the adapter with safe_serialization=True)" : ""}`,
    );
  }
  const { tensors } = await readSafetensors(file);
  const factors = new Map<string, { a?: HostTensor; b?: HostTensor }>();
  for (const [name, t] of tensors) {
    const m = /^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$/.exec(name);
    if (m === null) throw new WeightLoadError(`${file}: tensor ${JSON.stringify(name)} is not a LoRA factor (….lora_A.weight / ….lora_B.weight)`);
    const entry = factors.get(m[1]!) ?? {};
    entry[m[2] === "A" ? "a" : "b"] = t.tensor;
    factors.set(m[1]!, entry);
  }
  const linears = decoderLinears(config);
  const modules = linears.filter((l) => factors.has(l));
  const strange = [...factors.keys()].filter((m) => !linears.includes(m));
  if (strange.length > 0)
    throw new WeightLoadError(
      `${file}: ${strange.slice(0, 4).join(", ")} ${strange.length === 1 ? "is not a linear layer" : "are not linear layers"} of this ${config.modelType} model`,
    );
  if (modules.length === 0) throw new WeightLoadError(`${file} holds no LoRA factors`);
  const spec: LoraSpec = {
    r: cfg.r,
    alpha: cfg.alpha,
    dropout: cfg.dropout,
    useRslora: cfg.useRslora,
    modules,
    rankPattern: cfg.rankPattern,
    alphaPattern: cfg.alphaPattern,
  };
  const out = new Map<string, { a: HostTensor; b: HostTensor; scaling: number }>();
  for (const m of modules) {
    const f = factors.get(m)!;
    if (f.a === undefined || f.b === undefined) throw new WeightLoadError(`${file}: ${m} has lora_${f.a === undefined ? "A" : "B"} missing`);
    const { r, scaling } = moduleScaling(spec, m);
    const [out_, in_] = weightShape(m) ?? [];
    if (f.a.shape.join() !== `${r},${in_}` || f.b.shape.join() !== `${out_},${r}`)
      throw new WeightLoadError(
        `${file}: ${m}'s factors are [${f.a.shape}] and [${f.b.shape}], but a rank-${r} adapter of its [${out_}, ${in_}] weight has [${r}, ${in_}] and [${out_}, ${r}]; is the adapter for another base model?`,
      );
    out.set(m, { a: f.a, b: f.b, scaling });
  }
  return LoraAdapter.fromHost(spec, out);
}

/** The shortest target_modules list that selects exactly `modules` (short names when they do, else the full names). */
function targetModulesFor(config: CausalLMConfig, modules: readonly string[]): string[] {
  const short = [...new Set(modules.map((m) => m.slice(m.lastIndexOf(".") + 1)))];
  const selected = decoderLinears(config).filter((l) => short.some((s) => matchesTarget(l, s)));
  return selected.length === modules.length ? short : [...modules];
}

/**
 * Writes `adapter` as PEFT saves an adapter: adapter_config.json and adapter_model.safetensors
 * (float32) in `dir`, which must exist. `baseModel` is recorded as base_model_name_or_path.
 */
export async function saveAdapter(dir: string, adapter: LoraAdapter, config: CausalLMConfig, baseModel: string | undefined): Promise<void> {
  const s = adapter.spec;
  const json = {
    base_model_name_or_path: baseModel ?? null,
    bias: "none",
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    lora_alpha: s.alpha,
    lora_bias: false,
    lora_dropout: s.dropout,
    modules_to_save: null,
    peft_type: "LORA",
    r: s.r,
    rank_pattern: s.rankPattern ?? {},
    alpha_pattern: s.alphaPattern ?? {},
    revision: null,
    target_modules: targetModulesFor(config, s.modules),
    task_type: "CAUSAL_LM",
    use_dora: false,
    use_rslora: s.useRslora,
  };
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, t] of adapter.hostWeights()) tensors.set(`${PREFIX}${name}`, { tensor: t, dtype: "F32" });
  await writeSafetensors(path.join(dir, ADAPTER_WEIGHTS), tensors, { format: "pt" });
  await writeFileAtomic(path.join(dir, ADAPTER_CONFIG), JSON.stringify(json, null, 2) + "\n");
}

/** The names a module's factors have in adapter_model.safetensors. */
export const peftTensorNames = (module: string): { a: string; b: string } => {
  const n = loraWeightNames(module);
  return { a: `${PREFIX}${n.a}`, b: `${PREFIX}${n.b}` };
};
