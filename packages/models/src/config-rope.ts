/**
 * The rotary-embedding fields of config.json: theta and the scaling rule, in the transformers 4
 * layout (`rope_theta`, `rope_scaling`) or the transformers 5 one (`rope_parameters`, which
 * Gemma 3 nests by layer type), and the rotated share of each head (`partial_rotary_factor`).
 */
import { ModelConfigError } from "./config-error.js";
import { num, optObject, positive, posInt, type Json } from "./config-fields.js";

export type RopeScaling =
  | { type: "default" }
  | { type: "linear"; factor: number }
  | { type: "llama3"; factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxPositionEmbeddings: number }
  | {
      /**
       * Phi-3's LongRoPE: frequencies divided per dimension by `shortFactor`, or by `longFactor` in
       * a forward call whose largest position reaches past `originalMaxPositionEmbeddings`; cos and
       * sin multiplied by `attentionFactor`.
       */
      type: "longrope";
      shortFactor: number[];
      longFactor: number[];
      originalMaxPositionEmbeddings: number;
      attentionFactor: number;
    };

/** One rotary embedding: its base and scaling rule. */
export interface RopeSpec {
  theta: number;
  scaling: RopeScaling;
}

const THETA_WHY = "it is the base of the rotary frequencies 1/theta^(2i/d)";
const THETA_USUAL = "commonly 10000, 500000 or 1000000";

/** What a rope parser needs beyond the rope object itself. */
export interface RopeContext {
  where: string;
  /** The model's max_position_embeddings. */
  maxPositions: number;
  /** Rotated dimensions per head: the longrope factors hold one entry per pair of them. */
  rotaryDim: number;
  /** config.json's top-level original_max_position_embeddings, or the family's default (Phi-3: 4096). */
  originalMax: number | undefined;
  /** theta when neither the rope object nor config.json names one. */
  defaultTheta: number;
  /** Read rope types "su" and "yarn" as longrope, as transformers does for Phi-3's early long-context configs. */
  longropeAliases?: boolean;
}

const SUPPORTED = "default, linear, llama3 and longrope";

function factorList(params: Json, key: string, at: string, n: number): number[] {
  const v = params[key];
  const fix = `set ${key} to the ${n} factors the model was trained with (one per pair of rotated dimensions; Phi-3.5 and Phi-4-mini configs list them)`;
  if (v === undefined || v === null) throw new ModelConfigError(`${at}: missing required field "${key}"; ${fix}`);
  if (!Array.isArray(v) || v.length !== n || !v.every((x) => typeof x === "number" && Number.isFinite(x) && x > 0)) {
    throw new ModelConfigError(`${at}: field "${key}" must be a list of ${n} finite numbers > 0, got ${JSON.stringify(v)}; ${fix}`);
  }
  return v as number[];
}

/**
 * Parses one rope object (`params`, null when the config has none) against the top-level
 * fields of `raw` (transformers 4's rope_theta beside rope_scaling).
 */
export function parseRopeObject(raw: Json, params: Json | null, key: string, ctx: RopeContext): RopeSpec {
  const { where } = ctx;
  const theta =
    params?.["rope_theta"] != null
      ? positive(params, "rope_theta", `${where} ${key}`, undefined, THETA_WHY, THETA_USUAL)
      : positive(raw, "rope_theta", where, ctx.defaultTheta, THETA_WHY, THETA_USUAL);
  if (params === null) return { theta, scaling: { type: "default" } };
  const named = String(params["rope_type"] ?? params["type"] ?? "default");
  const type = ctx.longropeAliases === true && (named === "su" || named === "yarn") ? "longrope" : named;
  const factor = (): number =>
    positive(
      params,
      "factor",
      `${where} rope ${type} scaling`,
      undefined,
      "rotary frequencies are divided by it",
      "as in the model's original config, e.g. 8 for Llama 3.1",
    );
  switch (type) {
    case "default":
      return { theta, scaling: { type: "default" } };
    case "linear":
      return { theta, scaling: { type: "linear", factor: factor() } };
    case "llama3": {
      const at = `${where} rope llama3`;
      const lowFreqFactor = positive(params, "low_freq_factor", at, undefined, "wavelengths are divided by it", "1 for Llama 3.1");
      const highFreqFactor = num(params, "high_freq_factor", at);
      // The smoothing between the two bands divides by their difference.
      if (!(highFreqFactor > lowFreqFactor))
        throw new ModelConfigError(
          `${at}: high_freq_factor (${highFreqFactor}) must be greater than low_freq_factor (${lowFreqFactor}); Llama 3.1 uses 4 and 1`,
        );
      return {
        theta,
        scaling: {
          type: "llama3",
          factor: factor(),
          lowFreqFactor,
          highFreqFactor,
          originalMaxPositionEmbeddings: posInt(params, "original_max_position_embeddings", at),
        },
      };
    }
    case "longrope":
      return { theta, scaling: parseLongrope(params, ctx, `${where} ${key} (rope_type longrope)`) };
    default:
      throw new ModelConfigError(
        `${where}: ${key}.rope_type "${type}" is not supported; pbrl implements ${SUPPORTED}. Use a checkpoint with one of those, or remove ${key} if the model was trained without scaling`,
      );
  }
}

function parseLongrope(params: Json, ctx: RopeContext, at: string): RopeScaling {
  const n = ctx.rotaryDim / 2;
  const shortFactor = factorList(params, "short_factor", at, n);
  const longFactor = factorList(params, "long_factor", at, n);
  // transformers gives config.json's top-level value priority over the rope object's (Phi-3 stores it there).
  const originalMax = ctx.originalMax ?? posInt(params, "original_max_position_embeddings", at, ctx.maxPositions);
  const factor =
    params["factor"] != null
      ? positive(params, "factor", at, undefined, "it sets the attention factor", "max_position_embeddings / original_max_position_embeddings")
      : ctx.maxPositions / originalMax;
  // The paper's attention factor, as transformers' _compute_longrope_parameters derives it.
  const derived = factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(originalMax));
  const attentionFactor =
    params["attention_factor"] != null
      ? positive(params, "attention_factor", at, undefined, "cos and sin are multiplied by it", "unset, so it is derived from factor")
      : derived;
  return { type: "longrope", shortFactor, longFactor, originalMaxPositionEmbeddings: originalMax, attentionFactor };
}

/** The config's single rope object: rope_parameters (transformers 5) or rope_scaling (4.x), or none. */
export function ropeObject(raw: Json, where: string): { key: string; params: Json | null } {
  const key = raw["rope_parameters"] !== undefined && raw["rope_parameters"] !== null ? "rope_parameters" : "rope_scaling";
  return { key, params: optObject(raw, key, where) ?? null };
}

/**
 * head_dim × partial_rotary_factor, the leading dimensions of each head that are rotated (the
 * factor is read from the rope object first, as transformers 5 stores it there).
 */
export function rotaryDimension(raw: Json, params: Json | null, headDim: number, where: string, allowed: boolean, family: string): number {
  const inParams = params?.["partial_rotary_factor"] != null;
  const src = inParams ? params! : raw;
  const factor = src["partial_rotary_factor"] != null ? num(src, "partial_rotary_factor", where) : 1;
  if (factor === 1) return headDim;
  if (!allowed)
    throw new ModelConfigError(
      `${where}: partial_rotary_factor=${factor} is not supported for ${family} (transformers rotates the whole head there); remove it or set it to 1.0`,
    );
  const dim = Math.trunc(headDim * factor);
  if (!(factor > 0 && factor <= 1) || dim < 2 || dim % 2 !== 0) {
    throw new ModelConfigError(
      `${where}: partial_rotary_factor=${factor} must be in (0, 1] and leave an even number of rotated dimensions of head_dim ${headDim} (got ${dim}); Phi-4-mini uses 0.75`,
    );
  }
  return dim;
}
