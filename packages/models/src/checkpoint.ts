import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import {
  checkDevice,
  guardHeap,
  onDevice,
  openSafetensorsCheckpoint,
  replaceDirAtomic,
  writeFileAtomic,
  writeSafetensorsCheckpoint,
  type SafetensorsWriteDtype,
  type TensorToWrite,
} from "@pbrl/core-tensor";
import { CausalLM } from "./causal-lm.js";
import { ModelConfigError, parseModelConfig, serializeModelConfig } from "./config.js";
import { integralFloatPaths, stringifyConfigJson } from "./config-json.js";
import { parseGenerationConfig, type GenerationDefaults } from "./generation-config.js";
import { resolveModelDir } from "./hub.js";
import { checkMemory, describeModel } from "./memory-check.js";
import { weightsEstimate } from "./memory-estimate.js";
import { Tokenizer } from "./tokenizer.js";
import { isAdapterFolder, loadAdapter, readAdapterConfig, saveAdapter } from "./lora/peft-files.js";

/** A causal LM with what its checkpoint folder ships beside the weights. */
export interface Pretrained {
  model: CausalLM;
  tokenizer: Tokenizer | undefined;
  generation: GenerationDefaults;
  /** The folder it was loaded from. */
  dir: string;
}

export type SaveDtype = "float32" | "bfloat16" | "float16";
const SAFETENSORS_DTYPE: Record<SaveDtype, SafetensorsWriteDtype> = { float32: "F32", bfloat16: "BF16", float16: "F16" };

async function readJsonText(file: string, required: boolean): Promise<{ json: Record<string, unknown>; text: string } | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch {
    if (required) throw new ModelConfigError(`${file} is missing`);
    return undefined;
  }
  try {
    return { json: JSON.parse(text) as Record<string, unknown>, text };
  } catch (err) {
    throw new ModelConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

async function readJson(file: string, required: boolean): Promise<Record<string, unknown> | undefined> {
  return (await readJsonText(file, required))?.json;
}

export interface LoadOptions {
  revision?: string;
  device?: string;
  /**
   * For a PEFT adapter folder: the base checkpoint (a folder or hub id) to load it on, instead of
   * the adapter_config.json's base_model_name_or_path.
   */
  baseModel?: string;
}

/**
 * Loads a checkpoint folder or hub id: config.json, safetensors weights (single or sharded, any
 * of F32/F16/BF16, computed in float32), the tokenizer when present, generation_config.json.
 * `device` places the weights (libtorch: "cpu", "cuda", "cuda:N"; other backends: their one device).
 * A PEFT LoRA adapter folder (adapter_config.json) loads its base model with the adapter on it;
 * the adapter folder's tokenizer and generation config, when it has them, win over the base's.
 */
export async function loadPretrained(source: string, options: LoadOptions = {}): Promise<Pretrained> {
  // A device the backend cannot place tensors on fails before anything is read.
  if (options.device !== undefined) checkDevice(options.device);
  const dir = await resolveModelDir(source, options.revision);
  if (isAdapterFolder(dir)) return loadAdapterFolder(dir, options);
  return loadCheckpointFolder(source, dir, options);
}

async function loadAdapterFolder(dir: string, options: LoadOptions): Promise<Pretrained> {
  const cfg = await readAdapterConfig(dir);
  const baseSource = options.baseModel ?? cfg.baseModel;
  if (baseSource === undefined)
    throw new ModelConfigError(
      `${path.join(dir, "adapter_config.json")} names no base model (base_model_name_or_path); pass the checkpoint the adapter was trained on (--base_model, or baseModel in the library)`,
    );
  const { revision: _revision, baseModel: _base, ...rest } = options;
  const base = await loadPretrained(baseSource, rest);
  try {
    const model = await loadAdapterOnto(dir, base.model);
    const tokenizer = existsSync(path.join(dir, "tokenizer.json")) ? await Tokenizer.fromDir(dir) : base.tokenizer;
    const genRaw = await readJson(path.join(dir, "generation_config.json"), false);
    return { model, tokenizer, generation: genRaw !== undefined ? parseGenerationConfig(genRaw) : base.generation, dir };
  } finally {
    base.model.dispose(); // the adapter's view keeps the base weights
  }
}

/**
 * The PEFT adapter in `dir` on `base`'s weights (shared, not copied; `base` may be a LoRA view, whose
 * base is used): a new view owning the adapter. Agents, history snapshots and checkpoints of one
 * run load their adapters onto the base the run already holds this way.
 */
export async function loadAdapterOnto(dir: string, base: CausalLM): Promise<CausalLM> {
  const plain = base.adapter === undefined ? base : base.baseModel();
  try {
    const adapter = await onDevice(plain.device(), () => loadAdapter(dir, plain.config, (m) => plain.params.get(`${m}.weight`)?.shape));
    return plain.withAdapter(adapter);
  } finally {
    if (plain !== base) plain.dispose();
  }
}

async function loadCheckpointFolder(source: string, dir: string, options: LoadOptions): Promise<Pretrained> {
  const configPath = path.join(dir, "config.json");
  const configFile = (await readJsonText(configPath, true))!;
  const config = { ...parseModelConfig(configFile.json, configPath), integralFloats: integralFloatPaths(configFile.text) };
  // Before reading gigabytes of weights that the backend could not hold anyway.
  checkMemory(weightsEstimate(config, "weights, float32"), { what: `loading ${dir} (${describeModel(config)})`, advice: "use a smaller model" });
  // Read one tensor at a time as the model uploads it: no host copy of all the weights.
  const weights = await openSafetensorsCheckpoint(dir);
  let model: CausalLM;
  try {
    model = guardHeap("loading the model", () => onDevice(options.device ?? "auto", () => CausalLM.fromHostWeights(config, weights.tensors, dir)));
  } finally {
    weights.close();
  }
  model.origin = source;
  let tokenizer: Tokenizer | undefined;
  try {
    await fs.access(path.join(dir, "tokenizer.json"));
    tokenizer = await Tokenizer.fromDir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const genRaw = (await readJson(path.join(dir, "generation_config.json"), false)) ?? {
    bos_token_id: config.bosTokenId,
    eos_token_id: config.eosTokenIds,
    pad_token_id: config.padTokenId,
  };
  return { model, tokenizer, generation: parseGenerationConfig(genRaw), dir };
}

export interface SaveOptions {
  /** Storage dtype of the weights (default float32; computation is always float32). */
  dtype?: SaveDtype;
  /** Shard the weights into files of at most this many bytes. */
  maxShardBytes?: number;
  /**
   * A LoRA view: write the merged full checkpoint (W + s·B·A) instead of the PEFT adapter folder
   * (adapter_config.json + adapter_model.safetensors) that is written by default.
   */
  merge?: boolean;
  /** A LoRA adapter's base_model_name_or_path; default the checkpoint its base was loaded from. */
  baseModel?: string;
}

/**
 * Writes a Hugging Face checkpoint folder that transformers loads with from_pretrained:
 * config.json, model.safetensors (or shards + index), generation_config.json, and the tokenizer
 * files unchanged. The folder is assembled beside `dir` and swapped in, so a crash never leaves a
 * half-written checkpoint.
 */
export async function savePretrained(
  dir: string,
  what: { model: CausalLM; tokenizer?: Tokenizer | undefined; generation?: GenerationDefaults | undefined },
  options: SaveOptions = {},
): Promise<void> {
  const dtype = options.dtype ?? "float32";
  const stDtype = SAFETENSORS_DTYPE[dtype];
  const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n";
  const adapter = what.model.adapter;
  if (adapter !== undefined && options.merge !== true) {
    await replaceDirAtomic(dir, async (tmp) => {
      await saveAdapter(tmp, adapter, what.model.config, options.baseModel ?? what.model.origin);
      if (what.generation !== undefined) await writeFileAtomic(path.join(tmp, "generation_config.json"), json(what.generation.raw));
      if (what.tokenizer !== undefined) await what.tokenizer.save(tmp, writeFileAtomic);
    });
    return;
  }
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, tensor] of what.model.weightsToSave()) tensors.set(name, { tensor, dtype: stDtype });
  await replaceDirAtomic(dir, async (tmp) => {
    const config = what.model.config;
    await writeFileAtomic(path.join(tmp, "config.json"), stringifyConfigJson(serializeModelConfig(config, dtype), new Set(config.integralFloats ?? [])) + "\n");
    await writeSafetensorsCheckpoint(tmp, tensors, options.maxShardBytes !== undefined ? { maxShardBytes: options.maxShardBytes } : {});
    if (what.generation !== undefined) await writeFileAtomic(path.join(tmp, "generation_config.json"), json(what.generation.raw));
    if (what.tokenizer !== undefined) await what.tokenizer.save(tmp, writeFileAtomic);
  });
}
