/**
 * A comparator or replay buffer given in code instead of described by the config: what config.json
 * and the log say about it, so a run's record never claims the config's comparator_policy or
 * preference_replay_mode when something else ran.
 */
import type { RngStream } from "@pbrl/core-tensor";
import type { Tokenizer } from "@pbrl/models";
import type { Comparator, GenerationSettings, ReplayBuffer } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";

/** What a comparator factory receives: the run's live agents, so a comparator can sample their current weights. */
export interface ComparatorContext {
  /** The run's agents, loaded (their weights change as the run trains). */
  agents: readonly ResolvedAgent[];
  /** One per agent. */
  tokenizers: readonly Tokenizer[];
  /** The run's sampling settings (max_new_tokens, temperature, top_p, top_k, …). */
  generation: GenerationSettings;
  /** The run's comparator random stream: seeded by `seed` and saved in every checkpoint, so a resume continues it. */
  rng: RngStream;
}

/** Builds the run's comparator once its agents are loaded (e.g. with `createComparator` of @pbrl/comparators). */
export type ComparatorFactory = (ctx: ComparatorContext) => Comparator;

/** A plug-in as config.json records it. */
export interface PluginRecord {
  name: string;
  description: string | null;
}

const recordOf = (p: { name?: string; description?: string }, fallback: string): PluginRecord => ({
  name: p.name ?? fallback,
  description: p.description ?? null,
});

/** What config.json holds instead of the config's choice when code supplied the comparator or the replay buffer. */
export function customPluginFields(o: { comparator: Comparator | undefined; replayBuffer: ReplayBuffer | undefined }): Record<string, unknown> {
  return {
    ...(o.comparator !== undefined && { comparator_policy: "custom", custom_comparator: recordOf(o.comparator, "unnamed comparator") }),
    ...(o.replayBuffer !== undefined && { preference_replay_mode: "custom", custom_replay_buffer: recordOf(o.replayBuffer, "unnamed replay buffer") }),
  };
}

/** How the run's log names a plug-in: `name (description)`. */
export function pluginLabel(r: PluginRecord): string {
  return r.description === null || r.description === r.name ? r.name : `${r.name} (${r.description})`;
}
