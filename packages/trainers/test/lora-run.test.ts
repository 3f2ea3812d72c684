// Teams of LoRA agents (use_peft): agents from one checkpoint share one frozen base, save PEFT
// adapter folders, checkpoint adapters and their moments only, resume exactly (dropout masks
// included), and MARLHF's reference is the base with the adapter off.
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { frozenReference } from "@pbrl/rl-backends";
import { ConfigError, MADPOIterConfig, MADPOIterTrainer, MARLHFIterConfig, MARLHFIterTrainer } from "../src/index.js";
import { buildActorCritic } from "../src/actor-critic-setup.js";
import { resolveAgents } from "../src/agents.js";
import { loraBackbone } from "../src/lora-settings.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-lora-run-"));
const LORA = { use_peft: true, lora_r: 4, lora_alpha: 8, lora_dropout: 0.1, lora_target_modules: "all-linear" as const };
const iter = (output_dir: string, over: Record<string, unknown> = {}) =>
  MADPOIterConfig({
    ...small({ output_dir, num_train_epochs: 1, eval_interval: 0 }),
    ...LORA,
    num_agents: 2,
    num_iterations: 3,
    comparator_policy: "history",
    ...over,
  });
const bytes = (f: string) => readFileSync(f);

describe("use_peft: LoRA agents", () => {
  it("agents from one checkpoint share one base, each with its own fresh adapter", async () => {
    const agents = await resolveAgents({
      agentModel: TINY,
      numAgents: 3,
      lora: {
        settings: { r: 4, alpha: 8, dropout: 0, targetModules: undefined, useRslora: false },
        initRng: (i) => RngStream.fromSeed(0, `lora_init/agent_${i}`),
      },
    });
    expect(agents.every((ag) => ag.model.adapter !== undefined && ag.model.sharesBaseWith(agents[0]!.model))).toBe(true);
    expect(agents[0]!.model.hostWeights()).not.toEqual(agents[1]!.model.hostWeights()); // A drawn per agent
    expect(agents[0]!.model.trainableVariables()).toHaveLength(2 * 4); // q_proj and v_proj of 2 layers
    for (const ag of agents) ag.model.dispose();
  });

  it("madpo_iter saves PEFT adapter folders and adapter-only checkpoints, and a resume equals the run straight through", async () => {
    const straight = tmp();
    const t = new MADPOIterTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args: iter(straight) });
    const r = await t.train();
    t.dispose();
    expect(r.rounds).toHaveLength(3);
    for (const i of [0, 1]) {
      const dir = path.join(straight, "agents", `agent_${i}`);
      expect(readdirSync(dir).sort()).toEqual(expect.arrayContaining(["adapter_config.json", "adapter_model.safetensors"]));
      expect(existsSync(path.join(dir, "model.safetensors"))).toBe(false);
      const config = JSON.parse(readFileSync(path.join(dir, "adapter_config.json"), "utf8")) as Record<string, unknown>;
      expect(config).toMatchObject({ peft_type: "LORA", r: 4, lora_alpha: 8, lora_dropout: 0.1, base_model_name_or_path: TINY });
      // The adapter trained (B left zero) and loads onto its base.
      const p = await loadPretrained(dir);
      expect(p.model.adapter!.isIdentity()).toBe(false);
      p.model.dispose();
    }
    // Checkpoints hold adapters and their moments only: far smaller than the model.
    const round1 = path.join(straight, "checkpoints", "round_0001");
    expect(existsSync(path.join(round1, "agents", "agent_0", "adapter_model.safetensors"))).toBe(true);
    const modelBytes = statSync(path.join(TINY, "model.safetensors")).size;
    expect(statSync(path.join(round1, "optimizer_0.safetensors")).size).toBeLessThan(modelBytes / 4);

    const cut = tmp();
    const first = new MADPOIterTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args: iter(cut, { num_iterations: 2 }) });
    await first.train();
    first.dispose();
    const resumed = new MADPOIterTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: countE,
      args: iter(cut, { resume_from_checkpoint: true }),
    });
    await resumed.train();
    resumed.dispose();
    for (const i of [0, 1]) {
      const f = (d: string) => path.join(d, "agents", `agent_${i}`, "adapter_model.safetensors");
      expect(bytes(f(cut)).equals(bytes(f(straight)))).toBe(true);
    }
  });

  it("a fresh adapter's KL reference is its base with the adapter off (no copy); a trained one's a copy of its adapter", async () => {
    const base = (await loadPretrained(TINY)).model;
    const agent = base.withLora({ r: 4, alpha: 8, dropout: 0, targetModules: undefined, useRslora: false }, RngStream.fromSeed(1, "x"));
    const ref = frozenReference(agent);
    expect(ref.adapter).toBeUndefined();
    expect(ref.sharesBaseWith(agent)).toBe(true);
    for (const f of agent.adapter!.modules.values()) tf.tidy(() => f.b.assign(tf.mul(tf.onesLike(f.b), 0.5)));
    const ref2 = frozenReference(agent);
    expect(ref2.adapter).toBeDefined();
    expect(ref2.hostWeights()).toEqual(agent.hostWeights());
    for (const m of [ref, ref2, agent, base]) m.dispose();
  });

  it("marlhf_iter trains LoRA agents with the reference KL on", async () => {
    const out = tmp();
    const args = MARLHFIterConfig({
      ...small({ output_dir: out, eval_interval: 0 }),
      ...LORA,
      num_agents: 2,
      num_iterations: 1,
      num_generations: 2,
      reference_kl_enabled: true,
      comparator_policy: "current",
    });
    const t = new MARLHFIterTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args });
    const r = await t.train();
    t.dispose();
    expect(r.rounds).toHaveLength(1);
    expect(existsSync(path.join(out, "agents", "agent_1", "adapter_model.safetensors"))).toBe(true);
  });

  it("gradient_checkpointing=true trains the same adapters (one round), with gradient_accumulation_steps too", async () => {
    const adapters = async (over: Record<string, unknown>) => {
      const out = tmp();
      const t = new MADPOIterTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args: iter(out, { num_iterations: 1, ...over }) });
      await t.train();
      t.dispose();
      return (await import("@pbrl/core-tensor")).readSafetensors(path.join(out, "agents", "agent_0", "adapter_model.safetensors"));
    };
    const plain = await adapters({});
    const worst = (other: Awaited<ReturnType<typeof adapters>>) => {
      let w = 0;
      for (const [name, t] of plain.tensors) t.tensor.data.forEach((x, i) => (w = Math.max(w, Math.abs(x - other.tensors.get(name)!.tensor.data[i]!))));
      return w;
    };
    expect(worst(await adapters({ gradient_checkpointing: true }))).toBeLessThanOrEqual(1e-5);
    // Batches of 2 pairs as 2 micro-batches of 1: the same updates (without dropout, whose masks are drawn per micro-batch).
    const noDropout = await adapters({ lora_dropout: 0 });
    const split = await adapters({ lora_dropout: 0, gradient_accumulation_steps: 2, train_batch_size: 1 });
    let w = 0;
    for (const [name, t] of noDropout.tensors) t.tensor.data.forEach((x, i) => (w = Math.max(w, Math.abs(x - split.tensors.get(name)!.tensor.data[i]!))));
    expect(w).toBeLessThanOrEqual(1e-5);
    // The run trained: its adapters are not the fresh ones.
    expect(worst(await adapters({ num_train_epochs: 1, agent_learning_rate: 1e-9 }))).toBeGreaterThan(1e-4);
  });

  it("a LoRA team's critics and reward model are adapters over the agents' base, not copies of the model", async () => {
    const args = MARLHFIterConfig({ ...LORA, num_agents: 2, rl_algorithm: "iac", use_separate_critic: true });
    const agents = await resolveAgents({
      agentModel: TINY,
      numAgents: 2,
      lora: {
        settings: { r: 4, alpha: 8, dropout: 0, targetModules: "all-linear", useRslora: false },
        initRng: (i) => RngStream.fromSeed(0, `lora_init/agent_${i}`),
      },
    });
    const { setup, dispose } = await buildActorCritic(args, agents, RngStream.fromSeed(1, "critic"), undefined);
    expect(setup.algorithm === "iac" && setup.layout === "separate").toBe(true);
    if (setup.algorithm === "iac" && setup.layout === "separate")
      for (const c of setup.critics) {
        expect(c.backbone.adapter).toBeDefined();
        expect(c.backbone.sharesBaseWith(agents[0]!.model)).toBe(true);
      }
    const backbone = loraBackbone(agents[0]!, args, RngStream.fromSeed(2, "rm"));
    expect(backbone.model.sharesBaseWith(agents[1]!.model) && backbone.model.adapter!.isIdentity()).toBe(true);
    backbone.model.dispose();
    dispose();
    for (const ag of agents) ag.model.dispose();
  });

  it("marlhf_iter with maac trains a LoRA team and its critic", async () => {
    const out = tmp();
    const args = MARLHFIterConfig({
      ...small({ output_dir: out, eval_interval: 0 }),
      ...LORA,
      num_agents: 2,
      num_iterations: 1,
      num_generations: 2,
      rl_algorithm: "maac",
    });
    const t = new MARLHFIterTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args });
    expect((await t.train()).rounds).toHaveLength(1);
    t.dispose();
  });

  it("parallel_training=mp with use_peft is a config error that says why", () => {
    expect(() => iter(tmp(), { parallel_training: "mp", agent_devices: "cpu" })).toThrow(ConfigError);
    expect(() => iter(tmp(), { parallel_training: "mp", agent_devices: "cpu" })).toThrow(
      /with use_peft=true the agents share one base in one thread: set parallel_training="none"/,
    );
  });
});
