import { describe, expect, it } from "vitest";
import { CriticSourceError, resolveCriticSources, resolveRewardModelSource, validateActorCriticSettings } from "../src/index.js";

const obj = { model: "an object" };
const ids = (...xs: (string | undefined)[]) => xs;

describe("resolveCriticSources", () => {
  it("REINFORCE-family algorithms need no critic", () => {
    expect(resolveCriticSources({ rlAlgorithm: "magrpo", numAgents: 2, agentModelIds: ids(undefined, undefined) })).toEqual({ algorithm: "none" });
    expect(resolveCriticSources({ rlAlgorithm: "mareforce", numAgents: 2, criticModelName: "x", agentModelIds: ids("a", "a") })).toEqual({ algorithm: "none" });
  });

  it("maac: one centralized critic from critics[0], critic_model, critic_model_name or the agents' shared id", () => {
    const base = { rlAlgorithm: "maac", numAgents: 2, agentModelIds: ids("org/m", "org/m") };
    expect(resolveCriticSources(base)).toEqual({ algorithm: "maac", critic: { kind: "id", id: "org/m", field: "agent_model" } });
    expect(resolveCriticSources({ ...base, criticModelName: "org/c" })).toEqual({
      algorithm: "maac",
      critic: { kind: "id", id: "org/c", field: "critic_model_name" },
    });
    expect(resolveCriticSources({ ...base, critics: [obj] })).toEqual({ algorithm: "maac", critic: { kind: "object", value: obj, field: "critics" } });
    expect(resolveCriticSources({ ...base, criticModel: "org/d" })).toEqual({ algorithm: "maac", critic: { kind: "id", id: "org/d", field: "critic_model" } });
  });

  it("maac errors name the field: critics length, object agents without critic_model_name, different agent ids, ambiguity", () => {
    const base = { rlAlgorithm: "maac", numAgents: 2, agentModelIds: ids("org/m", "org/m") };
    expect(() => resolveCriticSources({ ...base, critics: [obj, obj] })).toThrow(CriticSourceError);
    expect(() => resolveCriticSources({ ...base, critics: [obj, obj] })).toThrow(/^critics: MAAC trains one centralized critic, got 2/);
    expect(() => resolveCriticSources({ ...base, agentModelIds: ids(undefined, undefined) })).toThrow(
      /^critic_model_name: .*model objects without a checkpoint id/,
    );
    expect(() => resolveCriticSources({ ...base, agentModelIds: ids("org/a", "org/b") })).toThrow(
      /^critic_model_name: .*different checkpoints \(org\/a, org\/b\).*ambiguous/,
    );
    expect(() => resolveCriticSources({ ...base, critics: [obj], criticModelName: "x" })).toThrow(/^critics and critic_model_name: ambiguous critic source/);
    expect(() => resolveCriticSources({ ...base, criticModel: obj, criticModelName: "x" })).toThrow(/^critic_model and critic_model_name: ambiguous/);
    expect(() => resolveCriticSources({ ...base, criticModelName: "  " })).toThrow(/^critic_model_name must be a non-empty model id/);
    expect(() => resolveCriticSources({ ...base, critics: [""] })).toThrow(/^critics\[0\]: an empty string/);
  });

  it("iac separate: one critic per agent; critic_model / critic_model_name broadcast; each agent's own id by default", () => {
    const base = { rlAlgorithm: "IAC", numAgents: 2, agentModelIds: ids("org/a", "org/b") };
    expect(resolveCriticSources(base)).toEqual({
      algorithm: "iac",
      layout: "separate",
      critics: [
        { kind: "id", id: "org/a", field: "agent_model" },
        { kind: "id", id: "org/b", field: "agent_model" },
      ],
    });
    expect(resolveCriticSources({ ...base, criticModelName: "org/c" })).toEqual({
      algorithm: "iac",
      layout: "separate",
      critics: [0, 1].map(() => ({ kind: "id", id: "org/c", field: "critic_model_name" })),
    });
    expect(resolveCriticSources({ ...base, criticModel: obj })).toEqual({
      algorithm: "iac",
      layout: "separate",
      critics: [0, 1].map(() => ({ kind: "object", value: obj, field: "critic_model" })),
    });
    expect(resolveCriticSources({ ...base, critics: ["x", obj] })).toEqual({
      algorithm: "iac",
      layout: "separate",
      critics: [
        { kind: "id", id: "x", field: "critics" },
        { kind: "object", value: obj, field: "critics" },
      ],
    });
    expect(() => resolveCriticSources({ ...base, critics: [obj] })).toThrow(/^critics: .*one critic per agent, got 1 for num_agents=2/);
    expect(() => resolveCriticSources({ ...base, agentModelIds: ids("org/a", undefined) })).toThrow(/^critic_model_name: .*agent 1 is a model object/);
    expect(() => resolveCriticSources({ ...base, critics: [obj, obj], criticModel: obj })).toThrow(/^critics and critic_model: ambiguous/);
  });

  it("iac shared (use_separate_critic=false): value heads on the actors; any critic source is an error", () => {
    const base = { rlAlgorithm: "iac", numAgents: 2, useSeparateCritic: false, agentModelIds: ids(undefined, undefined) };
    expect(resolveCriticSources(base)).toEqual({ algorithm: "iac", layout: "shared" });
    expect(() => resolveCriticSources({ ...base, critics: [obj, obj] })).toThrow(/^use_separate_critic=false .*critics must not be given/);
    expect(() => resolveCriticSources({ ...base, criticModelName: "x" })).toThrow(/^use_separate_critic=false .*critic_model_name must not be given/);
  });

  it("rejects an unknown rl_algorithm and a wrong agent count", () => {
    expect(() => resolveCriticSources({ rlAlgorithm: "ppo", numAgents: 1, agentModelIds: ids("a") })).toThrow(/^rl_algorithm: unknown value/);
    expect(() => resolveCriticSources({ rlAlgorithm: "maac", numAgents: 2, agentModelIds: ids("a") })).toThrow(/^agents: 1 agent id/);
  });
});

describe("resolveRewardModelSource", () => {
  it("reward_model_name, else agent 0's id; object agents need reward_model_name", () => {
    expect(resolveRewardModelSource({ rewardModelName: "org/r", agentModelIds: ids(undefined) })).toBe("org/r");
    expect(resolveRewardModelSource({ agentModelIds: ids("org/a", "org/b") })).toBe("org/a");
    expect(() => resolveRewardModelSource({ rewardModelName: null, agentModelIds: ids(undefined, undefined) })).toThrow(
      /^reward_model_name: the agents are model objects/,
    );
  });
});

describe("validateActorCriticSettings", () => {
  it("accepts CoMLRL's defaults and rejects each bad field by name", () => {
    expect(() =>
      validateActorCriticSettings({
        criticType: "v",
        valueLossCoef: 0.6,
        valueClipRange: 0.2,
        criticLearningRate: null,
        criticValueHeadHiddenDim: null,
        valueHeadHiddenDim: 32,
        useSeparateCritic: true,
      }),
    ).not.toThrow();
    expect(() => validateActorCriticSettings({ criticType: "x" })).toThrow(/^critic_type must be "v" or "q"/);
    expect(() => validateActorCriticSettings({ valueLossCoef: -1 })).toThrow(/^value_loss_coef/);
    expect(() => validateActorCriticSettings({ valueClipRange: 0 })).toThrow(/^value_clip_range/);
    expect(() => validateActorCriticSettings({ criticLearningRate: -1e-5 })).toThrow(/^critic_learning_rate/);
    expect(() => validateActorCriticSettings({ criticValueHeadHiddenDim: 1.5 })).toThrow(/^critic_value_head_hidden_dim/);
    expect(() => validateActorCriticSettings({ valueHeadHiddenDim: -1 })).toThrow(/^value_head_hidden_dim/);
  });
});
