import { promises as fs } from "node:fs";
import * as path from "node:path";
import {
  checkDevice,
  guardHeap,
  onDevice,
  readSafetensorsCheckpoint,
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

/**
 * Loads a checkpoint folder or hub id: config.json, safetensors weights (single or sharded, any
 * of F32/F16/BF16, computed in float32), the tokenizer when present, generation_config.json.
 * `device` places the weights (libtorch: "cpu", "cuda", "cuda:N"; other backends: their one device).
 */
export async function loadPretrained(source: string, options: { revision?: string; device?: string } = {}): Promise<Pretrained> {
  // A device the backend cannot place tensors on fails before anything is read.
  if (options.device !== undefined) checkDevice(options.device);
  const dir = await resolveModelDir(source, options.revision);
  const configPath = path.join(dir, "config.json");
  const configFile = (await readJsonText(configPath, true))!;
  const config = { ...parseModelConfig(configFile.json, configPath), integralFloats: integralFloatPaths(configFile.text) };
  // Before reading gigabytes of weights that the backend could not hold anyway.
  checkMemory(weightsEstimate(config, "weights, float32"), { what: `loading ${dir} (${describeModel(config)})`, advice: "use a smaller model" });
  const weights = await readSafetensorsCheckpoint(dir);
  const host = new Map([...weights.tensors].map(([name, t]) => [name, t.tensor]));
  const model = guardHeap("loading the model", () => onDevice(options.device ?? "auto", () => CausalLM.fromHostWeights(config, host, dir)));
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
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, tensor] of what.model.hostWeights()) tensors.set(name, { tensor, dtype: stDtype });
  await replaceDirAtomic(dir, async (tmp) => {
    const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n";
    const config = what.model.config;
    await writeFileAtomic(path.join(tmp, "config.json"), stringifyConfigJson(serializeModelConfig(config, dtype), new Set(config.integralFloats ?? [])) + "\n");
    await writeSafetensorsCheckpoint(tmp, tensors, options.maxShardBytes !== undefined ? { maxShardBytes: options.maxShardBytes } : {});
    if (what.generation !== undefined) await writeFileAtomic(path.join(tmp, "generation_config.json"), json(what.generation.raw));
    if (what.tokenizer !== undefined) await what.tokenizer.save(tmp, writeFileAtomic);
  });
}
