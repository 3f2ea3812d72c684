/** The sampling defaults a checkpoint ships in generation_config.json. */
export interface GenerationDefaults {
  bosTokenId?: number;
  eosTokenIds: number[];
  padTokenId?: number;
  doSample?: boolean;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxNewTokens?: number;
  /** The original JSON, written back unchanged on save. */
  raw: Record<string, unknown>;
}

function ids(v: unknown): number[] {
  if (Array.isArray(v)) return v.filter((x): x is number => Number.isInteger(x));
  return Number.isInteger(v) ? [v as number] : [];
}

function optNum(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function parseGenerationConfig(raw: Record<string, unknown>): GenerationDefaults {
  const out: GenerationDefaults = { eosTokenIds: ids(raw["eos_token_id"]), raw: { ...raw } };
  const bos = optNum(raw["bos_token_id"]);
  const pad = optNum(raw["pad_token_id"]);
  if (bos !== undefined) out.bosTokenId = bos;
  if (pad !== undefined) out.padTokenId = pad;
  if (typeof raw["do_sample"] === "boolean") out.doSample = raw["do_sample"];
  const t = optNum(raw["temperature"]);
  const p = optNum(raw["top_p"]);
  const k = optNum(raw["top_k"]);
  const m = optNum(raw["max_new_tokens"]);
  if (t !== undefined) out.temperature = t;
  if (p !== undefined) out.topP = p;
  if (k !== undefined) out.topK = k;
  if (m !== undefined) out.maxNewTokens = m;
  return out;
}
