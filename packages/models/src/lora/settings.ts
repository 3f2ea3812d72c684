/**
 * LoRA settings with TRL's ModelConfig names (use_peft, lora_r, lora_alpha, lora_dropout,
 * lora_target_modules, use_rslora) and PEFT's rules for which linear layers they adapt: a list of
 * module names matched as PEFT matches them (a module whose name is the entry or ends with
 * "." + entry), "all-linear" (every linear layer of the decoder, not the output layer), or, when
 * unset, PEFT's default for the family.
 */
import type { CausalLMConfig, ModelType } from "../config.js";
import { parameterSpecs } from "../parameters.js";

export interface LoraSettings {
  /** Rank of the update B·A (lora_r). */
  r: number;
  /** lora_alpha: the update is scaled by alpha / r (alpha / √r with rsLoRA). */
  alpha: number;
  /** lora_dropout: dropout on each adapted layer's input to A, in training only. */
  dropout: number;
  /** lora_target_modules: module names, "all-linear", or undefined for the family's default. */
  targetModules: readonly string[] | "all-linear" | undefined;
  /** use_rslora: scale by alpha / √r (rank-stabilised LoRA). */
  useRslora: boolean;
}

export const DEFAULT_LORA: LoraSettings = { r: 16, alpha: 32, dropout: 0.05, targetModules: undefined, useRslora: false };

export class LoraSettingsError extends Error {
  override name = "LoraSettingsError";
}

/** PEFT 0.21's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for the families pbrl builds; phi3 has none there. */
const PEFT_DEFAULT_TARGETS: Partial<Record<ModelType, readonly string[]>> = {
  llama: ["q_proj", "v_proj"],
  mistral: ["q_proj", "v_proj"],
  qwen2: ["q_proj", "v_proj"],
  qwen3: ["q_proj", "v_proj"],
  gemma3_text: ["q_proj", "v_proj"],
};

/** The scale of B·A: alpha / r, or alpha / √r with rsLoRA. */
export function loraScaling(s: Pick<LoraSettings, "r" | "alpha" | "useRslora">): number {
  return s.useRslora ? s.alpha / Math.sqrt(s.r) : s.alpha / s.r;
}

/** The decoder's linear layers as PEFT names modules ("model.layers.0.self_attn.q_proj"), lm_head left out. */
export function decoderLinears(config: CausalLMConfig): string[] {
  return parameterSpecs(config)
    .filter((s) => s.kind === "linear" && s.name !== "lm_head.weight")
    .map((s) => s.name.slice(0, -".weight".length));
}

/** PEFT's match of one target entry against a module name. */
export const matchesTarget = (module: string, entry: string): boolean => module === entry || module.endsWith(`.${entry}`);

/**
 * The modules a LoRA adapter covers in a model of this config, in the model's order. Throws a
 * LoraSettingsError naming what is wrong: a family without a PEFT default when none is given, or
 * entries that match no linear layer of the model.
 */
export function loraTargets(config: CausalLMConfig, targetModules: LoraSettings["targetModules"]): string[] {
  const linears = decoderLinears(config);
  const shortNames = [...new Set(linears.map((m) => m.slice(m.lastIndexOf(".") + 1)))];
  if (targetModules === "all-linear") return linears;
  let entries = targetModules;
  if (entries === undefined) {
    entries = PEFT_DEFAULT_TARGETS[config.modelType];
    if (entries === undefined)
      throw new LoraSettingsError(
        `lora_target_modules: PEFT has no default target modules for model_type ${config.modelType}; name them, e.g. lora_target_modules=[${shortNames.map((n) => JSON.stringify(n)).join(", ")}], or use "all-linear"`,
      );
  }
  if (entries.length === 0) throw new LoraSettingsError(`lora_target_modules: the list is empty; name modules (${shortNames.join(", ")}) or use "all-linear"`);
  const unmatched = entries.filter((e) => !linears.some((m) => matchesTarget(m, e)));
  if (unmatched.length > 0)
    throw new LoraSettingsError(
      `lora_target_modules: ${unmatched.map((e) => JSON.stringify(e)).join(", ")} ${unmatched.length === 1 ? "names" : "name"} no linear layer of this ${config.modelType} model; its linear layers are ${shortNames.join(", ")} (or "all-linear")`,
    );
  return linears.filter((m) => entries.some((e) => matchesTarget(m, e)));
}

/** Checks the numbers of LoRA settings; returns the problems (field: what is wrong). */
export function loraSettingsProblems(s: LoraSettings): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(s.r) || s.r < 1) problems.push(`lora_r: got ${s.r}; expected an integer ≥ 1`);
  if (!Number.isFinite(s.alpha) || s.alpha <= 0) problems.push(`lora_alpha: got ${s.alpha}; expected a finite number > 0`);
  if (!(s.dropout >= 0 && s.dropout < 1)) problems.push(`lora_dropout: got ${s.dropout}; expected a number in [0, 1)`);
  return problems;
}
