import { RngStream } from "@pbrl/core-tensor";
import type { Tokenizer } from "@pbrl/models";
import { loraSettingsOf, type LoraArgs } from "./lora-settings.js";
import { STREAMS } from "./stream-names.js";
import type { TaskItem } from "@pbrl/preference-data";
import { resolveAgents, type AgentSource, type ResolvedAgent } from "./agents.js";
import type { TaskSetup } from "./collaboration.js";
import { startRunAgents, type Compute, type ComputeArgs } from "./compute.js";
import { checkRunMemory, type RunMemoryArgs } from "./run-memory.js";

/**
 * A trainer's agents, loaded once its backend is chosen (and moved to libtorch by backend="auto"
 * when the run does not fit the first backend's memory), with the lines that say so.
 */
export async function loadTrainerAgents(o: {
  trainerName: string;
  configName: string;
  args: ComputeArgs & RunMemoryArgs & LoraArgs & { verbose: boolean; collaboration_mode: string; seed: number; gradient_checkpointing: boolean };
  task: TaskSetup;
  sources: {
    agents?: readonly AgentSource[] | undefined;
    agentModel?: string | undefined;
    tokenizer?: Tokenizer | readonly Tokenizer[] | undefined;
    trainDataset: readonly TaskItem[];
  };
  log: (line: string) => void;
  /** The run's longest prompt in tokens, its prompts rendered with these agents' tokenizers (for backend="auto"'s memory check). */
  promptTokens: (agents: readonly ResolvedAgent[]) => Promise<number>;
}): Promise<{ compute: Compute; agents: ResolvedAgent[] }> {
  const { args: a, task, sources: s } = o;
  if (a.verbose) o.log(`pbrl: loading ${task.actors} agent model${task.actors === 1 ? "" : "s"}${s.agentModel !== undefined ? ` from ${s.agentModel}` : ""}`);
  const loaded = await startRunAgents({
    configName: o.configName,
    args: a,
    actors: task.actors,
    resolve: async (devices) => {
      const agents = await resolveAgents({
        agents: s.agents,
        agentModel: s.agentModel,
        tokenizer: s.tokenizer,
        numAgents: task.actors,
        centralized: a.collaboration_mode === "centralized",
        devices,
        ...(a.use_peft ? { lora: { settings: loraSettingsOf(a), initRng: (i: number) => RngStream.fromSeed(a.seed, `${STREAMS.loraInit}/agent_${i}`) } } : {}),
      });
      for (const ag of agents) ag.model.gradientCheckpointing = a.gradient_checkpointing;
      return agents;
    },
    fits: async (agents) => {
      checkRunMemory(o.trainerName, a, agents, await o.promptTokens(agents), s.trainDataset.length);
    },
    log: o.log,
  });
  if (a.verbose) o.log(`pbrl: ${loaded.compute.backend.description}${a.bf16 ? ", bf16 matrix products" : ""}`);
  return loaded;
}
