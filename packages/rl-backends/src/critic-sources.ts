import type { DeviceSpec } from "@pbrl/core-tensor";
import { canonicalRlAlgorithm } from "./advantages.js";
import { CRITIC_TYPES } from "./critic.js";

/**
 * Where each critic of an actor-critic run comes from, decided before anything is loaded.
 *
 * - `maac`: exactly one centralized critic: `critics` with one entry, or `critic_model`, or
 *   `critic_model_name`, or — when none is given — the agents' checkpoint id, if every agent was
 *   loaded from the same id. Agents that are model objects (no id) or come from different ids
 *   need an explicit source.
 * - `iac` with `use_separate_critic=true` (default): one critic per agent: `critics` with
 *   `num_agents` entries, or `critic_model` / `critic_model_name` for every agent (each gets its
 *   own copy), or each agent's own checkpoint id; an agent without an id needs an explicit source.
 * - `iac` with `use_separate_critic=false`: value heads on the actors; giving any critic source
 *   is an error (the critic *is* the actor).
 * - Giving more than one of `critics`, `critic_model`, `critic_model_name` is ambiguous: an error.
 * - REINFORCE-family algorithms use no critic; the critic fields are ignored.
 *
 * Every error is a `CriticSourceError` whose message starts with the field to fix.
 */
export class CriticSourceError extends Error {
  override name = "CriticSourceError";
}

/** What decides the critic sources (a trainer translates its config's fields; errors name those fields). */
export interface CriticSourceOptions {
  /** rl_algorithm (aliases accepted). */
  rlAlgorithm: string;
  numAgents: number;
  /** use_separate_critic; default true. */
  useSeparateCritic?: boolean | undefined;
  /** critic_model_name */
  criticModelName?: string | null | undefined;
  /** Critic sources passed to the trainer (ids or model objects). */
  critics?: readonly unknown[] | null | undefined;
  /** One critic source passed to the trainer (an id or a model object). */
  criticModel?: unknown;
  /** Per agent: the checkpoint id it was loaded from, or undefined for a model object. */
  agentModelIds: readonly (string | undefined)[];
}

/** A critic to build: from a checkpoint id, or from a given object (which the trainer copies). */
export type CriticSource =
  | { kind: "id"; id: string; field: "critics" | "critic_model" | "critic_model_name" | "agent_model" }
  | { kind: "object"; value: unknown; field: "critics" | "critic_model" };

export type CriticPlan =
  | { algorithm: "maac"; critic: CriticSource }
  | { algorithm: "iac"; layout: "separate"; critics: CriticSource[] }
  | { algorithm: "iac"; layout: "shared" }
  | { algorithm: "none" };

function sourceOf(value: unknown, field: "critics" | "critic_model", where: string): CriticSource {
  if (typeof value === "string") {
    if (value.trim() === "") throw new CriticSourceError(`${where}: an empty string is not a model id`);
    return { kind: "id", id: value, field };
  }
  if (value === null || value === undefined) throw new CriticSourceError(`${where}: got ${String(value)}; pass a checkpoint id or a model object`);
  return { kind: "object", value, field };
}

/** Resolves (or rejects) the critic sources of a run; see the module notes. */
export function resolveCriticSources(c: CriticSourceOptions): CriticPlan {
  const algorithm = canonicalRlAlgorithm(c.rlAlgorithm);
  if (algorithm !== "maac" && algorithm !== "iac") return { algorithm: "none" };
  const n = c.numAgents;
  if (!Number.isInteger(n) || n < 1) throw new CriticSourceError(`num_agents must be an integer ≥ 1, got ${n}`);
  if (c.agentModelIds.length !== n) throw new CriticSourceError(`agents: ${c.agentModelIds.length} agent id entr(ies) for num_agents=${n}`);
  const name = c.criticModelName ?? undefined;
  if (name !== undefined && (typeof name !== "string" || name.trim() === ""))
    throw new CriticSourceError(`critic_model_name must be a non-empty model id, got ${JSON.stringify(name)}`);
  const critics = c.critics ?? undefined;
  const model = c.criticModel ?? undefined;
  const given = [critics !== undefined && "critics", model !== undefined && "critic_model", name !== undefined && "critic_model_name"].filter(
    (x): x is string => x !== false,
  );

  if (algorithm === "iac" && c.useSeparateCritic === false) {
    if (given.length > 0) {
      throw new CriticSourceError(
        `use_separate_critic=false puts a value head on each actor's own backbone, so ${given.join(" and ")} must not be given; set use_separate_critic=true to train separate critics`,
      );
    }
    return { algorithm: "iac", layout: "shared" };
  }
  if (given.length > 1)
    throw new CriticSourceError(`${given.join(" and ")}: ambiguous critic source; give only one of critics, critic_model, critic_model_name`);
  const label = algorithm === "maac" ? "rl_algorithm=maac" : "rl_algorithm=iac with use_separate_critic=true";

  if (algorithm === "maac") {
    if (critics !== undefined) {
      if (critics.length !== 1)
        throw new CriticSourceError(
          `critics: MAAC trains one centralized critic, got ${critics.length} critic source(s); pass exactly one (or critic_model / critic_model_name)`,
        );
      return { algorithm, critic: sourceOf(critics[0], "critics", "critics[0]") };
    }
    if (model !== undefined) return { algorithm, critic: sourceOf(model, "critic_model", "critic_model") };
    if (name !== undefined) return { algorithm, critic: { kind: "id", id: name, field: "critic_model_name" } };
    const ids = new Set(c.agentModelIds);
    if (ids.has(undefined))
      throw new CriticSourceError(
        `critic_model_name: ${label} needs a critic source, and the agents are model objects without a checkpoint id to start the critic from; set critic_model_name (or pass critics / critic_model)`,
      );
    if (ids.size > 1)
      throw new CriticSourceError(
        `critic_model_name: ${label} has one centralized critic, but the agents come from different checkpoints (${[...ids].join(", ")}); which one the critic starts from is ambiguous, so set critic_model_name`,
      );
    return { algorithm, critic: { kind: "id", id: c.agentModelIds[0]!, field: "agent_model" } };
  }

  if (critics !== undefined) {
    if (critics.length !== n)
      throw new CriticSourceError(
        `critics: ${label} needs one critic per agent, got ${critics.length} for num_agents=${n} (or pass one critic_model / critic_model_name for every agent)`,
      );
    return { algorithm, layout: "separate", critics: critics.map((x, i) => sourceOf(x, "critics", `critics[${i}]`)) };
  }
  if (model !== undefined) {
    const s = sourceOf(model, "critic_model", "critic_model");
    return { algorithm, layout: "separate", critics: Array.from({ length: n }, () => s) };
  }
  if (name !== undefined)
    return { algorithm, layout: "separate", critics: Array.from({ length: n }, () => ({ kind: "id", id: name, field: "critic_model_name" }) as const) };
  const missing = c.agentModelIds.findIndex((id) => id === undefined);
  if (missing >= 0)
    throw new CriticSourceError(
      `critic_model_name: ${label} needs a critic per agent, and agent ${missing} is a model object without a checkpoint id to start its critic from; set critic_model_name (or pass critics / critic_model, or use_separate_critic=false)`,
    );
  return { algorithm, layout: "separate", critics: c.agentModelIds.map((id) => ({ kind: "id", id: id!, field: "agent_model" }) as const) };
}

/** critic_devices as configs hold it: null/"auto", one name, or a list (one entry, or one per agent). */
export type CriticDeviceSpec = DeviceSpec;

/**
 * The device of each critic a plan builds, in the plan's order (`critic_devices`, falling back to
 * the agents' devices, as CoMLRL's mp placement does): MAAC's one centralized critic on the first
 * critic_devices entry, else agent 0's device; IAC's separate critics on critic_devices' entry
 * for their agent (one entry: every agent's), else their agent's device. "auto" is kept: the
 * critic then stays where its backbone loads. IAC's shared layout has no critic (its value heads
 * sit on the actors): an empty list.
 */
export function criticDevices(plan: CriticPlan, spec: CriticDeviceSpec, agentDevices: readonly string[]): string[] {
  const list = spec === null || spec === undefined ? undefined : typeof spec === "string" ? [spec] : spec;
  if (list !== undefined && list.length === 0) throw new CriticSourceError("critic_devices: an empty list; give one device or one per agent");
  if (plan.algorithm === "maac") return [list?.[0] ?? agentDevices[0] ?? "auto"];
  if (plan.algorithm !== "iac" || plan.layout === "shared") return [];
  const n = plan.critics.length;
  if (list !== undefined && list.length !== 1 && list.length !== n)
    throw new CriticSourceError(`critic_devices: has ${list.length} entries; give one device or ${n} (one per agent)`);
  return plan.critics.map((_, i) => (list === undefined ? (agentDevices[i] ?? "auto") : list.length === 1 ? list[0]! : list[i]!));
}

export interface RewardModelSourceOptions {
  /** reward_model_name */
  rewardModelName?: string | null | undefined;
  /** Per agent: the checkpoint id it was loaded from, or undefined for a model object. */
  agentModelIds: readonly (string | undefined)[];
}

/**
 * The checkpoint the joint reward model starts from: `reward_model_name`, else the agents' id
 * (agent 0's, as CoMLRL). Agents that are model objects need `reward_model_name`.
 */
export function resolveRewardModelSource(c: RewardModelSourceOptions): string {
  const name = c.rewardModelName ?? undefined;
  if (name !== undefined) {
    if (typeof name !== "string" || name.trim() === "")
      throw new CriticSourceError(`reward_model_name must be a non-empty model id, got ${JSON.stringify(name)}`);
    return name;
  }
  const id = c.agentModelIds[0];
  if (id === undefined)
    throw new CriticSourceError(
      "reward_model_name: the agents are model objects without a checkpoint id to start the reward model from; set reward_model_name",
    );
  return id;
}

/** Actor-critic settings given by hand (a trainer's config validates its own fields). */
export interface ActorCriticSettings {
  criticType?: string | undefined;
  valueLossCoef?: number | undefined;
  valueClipRange?: number | null | undefined;
  criticLearningRate?: number | null | undefined;
  criticValueHeadHiddenDim?: number | null | undefined;
  valueHeadHiddenDim?: number | null | undefined;
  useSeparateCritic?: boolean | undefined;
}

/** Checks actor-critic settings; a RangeError naming the setting by its config field (CoMLRL's name) on the first bad one. */
export function validateActorCriticSettings(c: ActorCriticSettings): void {
  if (c.criticType !== undefined && !(CRITIC_TYPES as readonly string[]).includes(c.criticType))
    throw new RangeError(`critic_type must be "v" or "q", got ${JSON.stringify(c.criticType)}`);
  if (c.valueLossCoef !== undefined && (typeof c.valueLossCoef !== "number" || !Number.isFinite(c.valueLossCoef) || c.valueLossCoef < 0)) {
    throw new RangeError(`value_loss_coef must be a finite number ≥ 0, got ${String(c.valueLossCoef)}`);
  }
  const positive = (field: string, v: number | null | undefined): void => {
    if (v === undefined || v === null) return;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw new RangeError(`${field} must be a finite number > 0 (or null), got ${String(v)}`);
  };
  positive("value_clip_range", c.valueClipRange);
  positive("critic_learning_rate", c.criticLearningRate);
  for (const [field, v] of [
    ["critic_value_head_hidden_dim", c.criticValueHeadHiddenDim],
    ["value_head_hidden_dim", c.valueHeadHiddenDim],
  ] as const) {
    if (v !== undefined && v !== null && (!Number.isInteger(v) || v < 0))
      throw new RangeError(`${field} must be an integer ≥ 0 (or null for a linear value head), got ${String(v)}`);
  }
  if (c.useSeparateCritic !== undefined && typeof c.useSeparateCritic !== "boolean")
    throw new RangeError(`use_separate_critic must be a boolean, got ${String(c.useSeparateCritic)}`);
}
