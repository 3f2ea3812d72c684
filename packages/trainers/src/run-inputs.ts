/**
 * What a run reads from disk, by the setting that names it: the agents' and the other models'
 * checkpoint folders, and whatever the caller adds (the CLI: datasets, reward and formatter
 * modules). No run folder may be one of them, lie inside one, or hold one where it writes.
 */
import type { RunInput } from "./run-dir.js";
import type { TrainerConfig, TrainerOptions } from "./trainer-core.js";

const MODEL_FIELDS = ["comparator_model_name", "comparator_agents", "reward_model_name", "critic_model_name"];

export function runInputs(args: TrainerConfig, options: TrainerOptions): RunInput[] {
  const named: [string, unknown][] = [
    ["agent_model", options.agentModel],
    ...(options.agents ?? []).map((s, i): [string, unknown] => [`agents[${i}]`, s]),
    ...MODEL_FIELDS.flatMap((f): [string, unknown][] => {
      const v = (args as unknown as Record<string, unknown>)[f];
      return Array.isArray(v) ? v.map((x, i): [string, unknown] => [`${f}[${i}]`, x]) : [[f, v]];
    }),
    ...Object.entries(options.inputPaths ?? {}),
  ];
  // Models given as objects were loaded by the caller; hub ids are filtered out later (they name no local path).
  return named.filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== "").map(([what, p]) => ({ what, path: p }));
}
