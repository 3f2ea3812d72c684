/**
 * The critics of an actor-critic RL stage (maac, iac), from the config's critic fields and the
 * trainer's `critics` option: where each comes from, where it lives, and building them fresh.
 */
import type { RngStream } from "@pbrl/core-tensor";
import { CausalLM, loadPretrained, type Pretrained } from "@pbrl/models";
import { ActorValueHead, Critic, criticDevices, resolveCriticSources, type ActorCriticSetup, type CriticPlan, type CriticSource } from "@pbrl/rl-backends";
import type { ResolvedAgent } from "./agents.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import { loraBackbone, type LoraArgs } from "./lora-settings.js";
import { agentDevicesOf, loadOn } from "./role-devices.js";

/** Where actor-critic critics may come from besides the config: checkpoint ids or model objects. */
export type CriticObjects = readonly (string | CausalLM | Pretrained)[];

/** The config fields the critics are built from. */
export type CriticFields = Pick<
  MARLHFConfig,
  | "rl_algorithm"
  | "use_separate_critic"
  | "critic_model_name"
  | "critic_devices"
  | "critic_learning_rate"
  | "agent_learning_rate"
  | "critic_value_head_hidden_dim"
  | "value_head_hidden_dim"
  | keyof LoraArgs
>;

/** The config's critic fields translated once into the algorithm package's options. */
export function criticPlan(a: CriticFields, agents: readonly ResolvedAgent[], critics: CriticObjects | undefined): CriticPlan {
  return resolveCriticSources({
    rlAlgorithm: a.rl_algorithm,
    numAgents: agents.length,
    useSeparateCritic: a.use_separate_critic,
    criticModelName: a.critic_model_name,
    critics: critics ?? null,
    agentModelIds: agents.map((ag) => ag.checkpoint),
  });
}

/**
 * Fresh critics for one policy-learning stage, as CoMLRL builds a new actor-critic trainer (and
 * so new critics) every time: MAAC's centralized critic, IAC's per-agent critics, or IAC's value
 * heads on the actors' own backbones.
 */
export async function buildActorCritic(
  a: CriticFields,
  agents: readonly ResolvedAgent[],
  rng: RngStream,
  critics: CriticObjects | undefined,
): Promise<{ setup: ActorCriticSetup; dispose: () => void }> {
  const plan = criticPlan(a, agents, critics);
  const devices = criticDevices(plan, a.critic_devices, agentDevicesOf(agents));
  const learningRate = a.critic_learning_rate ?? a.agent_learning_rate;
  const made: { dispose: () => void }[] = [];
  const dispose = () => made.forEach((m) => m.dispose());
  const critic = async (source: CriticSource, device: string): Promise<Critic> => {
    let c: Critic;
    // use_peft: a critic on an agent's own checkpoint is that agent's base with an adapter of its own (one base in memory).
    const agent = source.kind === "id" && a.use_peft && a.critic_model_name === null ? agents.find((ag) => ag.checkpoint === source.id) : undefined;
    if (agent !== undefined && agent.model.device() === (device === "auto" ? agent.model.device() : device)) {
      const p = loraBackbone(agent, a, rng);
      c = Critic.create({ backbone: p.model, tokenizer: agent.tokenizer, headHiddenDim: a.critic_value_head_hidden_dim, rng, learningRate, copy: false });
    } else if (source.kind === "id") {
      const p = await loadPretrained(source.id, loadOn(device));
      if (p.tokenizer === undefined) {
        p.model.dispose();
        throw new Error(`${source.field}: ${source.id} has no tokenizer.json; a critic reads text with its backbone's tokenizer`);
      }
      c = Critic.create({ backbone: p.model, tokenizer: p.tokenizer, headHiddenDim: a.critic_value_head_hidden_dim, rng, learningRate, copy: false });
    } else {
      const v = source.value as CausalLM | Pretrained;
      const backbone = v instanceof CausalLM ? v : v.model;
      // A bare model object reads the agents' text with the agents' tokenizer.
      const tokenizer = v instanceof CausalLM ? agents[0]!.tokenizer : (v.tokenizer ?? agents[0]!.tokenizer);
      c = Critic.create({ backbone, tokenizer, headHiddenDim: a.critic_value_head_hidden_dim, rng, learningRate, device });
    }
    made.push(c);
    return c;
  };
  try {
    if (plan.algorithm === "maac") return { setup: { algorithm: "maac", critic: await critic(plan.critic, devices[0]!) }, dispose };
    if (plan.algorithm === "iac" && plan.layout === "separate") {
      const list: Critic[] = [];
      for (const [i, s] of plan.critics.entries()) list.push(await critic(s, devices[i]!));
      return { setup: { algorithm: "iac", layout: "separate", critics: list }, dispose };
    }
    if (plan.algorithm === "iac") {
      // A value head reads its actor's hidden states: it lives where the actor does.
      const valueHeads = agents.map((ag) =>
        ActorValueHead.create({
          hiddenSize: ag.model.config.hiddenSize,
          hiddenDim: a.value_head_hidden_dim,
          rng,
          learningRate: a.agent_learning_rate,
          device: ag.model.device(),
        }),
      );
      made.push(...valueHeads);
      return { setup: { algorithm: "iac", layout: "shared", valueHeads }, dispose };
    }
    throw new Error(`rl_algorithm=${a.rl_algorithm} is not an actor-critic algorithm`);
  } catch (err) {
    dispose();
    throw err;
  }
}
