// A run's memory plan from its config, and the check that stops a run the backend cannot hold
// before anything is written to output_dir.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { memoryCapacity, MemoryBudgetError } from "@pbrl/core-tensor";
import { generationEstimate, llamaConfigJson, modelSizes, parseModelConfig, trainingStepEstimate } from "@pbrl/models";
import { MADPOConfig, MADPOIterConfig, MADPOIterTrainer, MADPOTrainer, MARLHFConfig } from "../src/index.js";
import { runMemoryEstimate, runMemoryPlan, type RunMemoryContext } from "../src/run-memory.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const model = parseModelConfig(llamaConfigJson({ vocabSize: 1000, hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2 }));
const ctx = (over: Partial<RunMemoryContext> = {}): RunMemoryContext => ({
  agents: [model, model],
  promptTokens: 20,
  items: 5,
  kernels: "tfjs",
  nativeDecode: false,
  ...over,
});

describe("runMemoryPlan", () => {
  it("MADPO: rows per generate call, two sequences per pair, no copies", () => {
    const p = runMemoryPlan("madpo", MADPOConfig({ preference_num_candidates: 4, generation_batch_size: 64, train_batch_size: 3, max_new_tokens: 16 }), ctx());
    // 64 rows would hold 16 prompts of 4 candidates, but there are only 5 items.
    expect(p).toMatchObject({ generationRows: 20, trainSequences: 6, comparatorCopies: 0, referenceCopies: 0, critics: 0, promptTokens: 20, maxNewTokens: 16 });
    expect(p.rewardModel).toBeUndefined();
    expect(runMemoryPlan("madpo", MADPOConfig({ preference_num_candidates: 8, generation_batch_size: 4 }), ctx()).generationRows).toBe(8);
  });

  it("iterative MADPO: a comparator that copies the agents, and its own candidate count", () => {
    const p = runMemoryPlan(
      "madpo_iter",
      MADPOIterConfig({ comparator_policy: "current_copy", preference_num_candidates: 4, comparator_num_candidates: 8, generation_batch_size: 16 }),
      ctx(),
    );
    expect(p).toMatchObject({ comparatorCopies: 1, generationRows: 16 });
    expect(runMemoryPlan("madpo_iter", MADPOIterConfig({ comparator_policy: "current" }), ctx()).comparatorCopies).toBe(0);
    expect(runMemoryPlan("madpo_iter", MADPOIterConfig({ comparator_policy: "history" }), ctx()).comparatorCopies).toBe(1);
  });

  it("MARLHF: frozen references, critics, the reward model's fit and the RL step's samples", () => {
    const a = MARLHFConfig({
      reference_kl_enabled: true,
      rl_algorithm: "maac",
      num_generations: 4,
      train_batch_size: 2,
      reward_train_batch_size: 3,
      max_new_tokens: 10,
    });
    const p = runMemoryPlan("marlhf", a, ctx());
    expect(p).toMatchObject({ referenceCopies: 1, critics: 1, trainSequences: 8, rewardModel: { sequences: 6, seqLen: 2 * (20 + 10) } });
    const iac = runMemoryPlan("marlhf", MARLHFConfig({ rl_algorithm: "iac", reward_max_length: 64 }), ctx());
    expect(iac).toMatchObject({ critics: 2, referenceCopies: 0, rewardModel: { seqLen: 64 } });
  });
});

describe("runMemoryEstimate", () => {
  it("the agents' weights and moments for the whole run, plus the largest phase", () => {
    const plan = runMemoryPlan(
      "madpo_iter",
      MADPOIterConfig({ comparator_policy: "current_copy", preference_num_candidates: 4, generation_batch_size: 8, train_batch_size: 2, max_new_tokens: 12 }),
      ctx(),
    );
    const { estimate, largestPhase } = runMemoryEstimate(plan);
    const w = modelSizes(model).parameters * 4;
    const step = trainingStepEstimate(model, { sequences: 4, seqLen: 32, kernels: "tfjs" });
    const stepPhase = step.tensorBytes - 3 * w; // the weights and moments are resident, the gradients not
    const genPhase = 2 * w + generationEstimate(model, { rows: 8, prompts: 2, promptLen: 20, maxNewTokens: 12, kernels: "tfjs" }).tensorBytes;
    expect(largestPhase).toBe(stepPhase > genPhase ? "training step" : "generation");
    expect(estimate.tensorBytes).toBeCloseTo(2 * 3 * w + Math.max(stepPhase, genPhase), 6);
    expect(estimate.items.slice(0, 4).map((i) => i.label)).toEqual(["agent 0 weights", "agent 0 AdamW moments", "agent 1 weights", "agent 1 AdamW moments"]);
    expect(estimate.items.slice(4).every((i) => i.label.startsWith(`${largestPhase}: `))).toBe(true);
  });

  it("bf16 adds a bfloat16 copy of every multiplying model's weights: agents, frozen references, critics", () => {
    const a = MARLHFConfig({ rl_algorithm: "maac", reference_kl_enabled: true, reward_max_length: 64 });
    const f32 = runMemoryEstimate(runMemoryPlan("marlhf", a, ctx())).estimate;
    const bf16 = runMemoryEstimate(runMemoryPlan("marlhf", { ...a, bf16: true }, ctx())).estimate;
    const params = modelSizes(model).parameters;
    // 2 agents + 2 frozen references + 1 critic, 2 bytes a parameter each.
    expect(bf16.tensorBytes - f32.tensorBytes).toBe(5 * 2 * params);
    expect(bf16.items.filter((i) => i.label.endsWith("bfloat16 copy of the weights (bf16)")).map((i) => i.label.split(":")[0])).toEqual([
      "agent 0",
      "agent 0 frozen reference",
      "agent 1",
      "agent 1 frozen reference",
      "critic 0",
    ]);
  });

  it("LoRA: one base for the team, an adapter with moments per agent, and a training step whose gradients and optimizer temporaries are the adapter's", () => {
    const a = MADPOIterConfig({
      comparator_policy: "current",
      preference_num_candidates: 2,
      generation_batch_size: 8,
      train_batch_size: 2,
      max_new_tokens: 12,
    });
    const full = runMemoryEstimate(runMemoryPlan("madpo_iter", a, ctx({ kernels: "fused" }))).estimate;
    const adapter = { adapterParameters: 5000, bases: 1, largestFactor: 1024, adapterWidths: 0 };
    const lora = runMemoryEstimate({ ...runMemoryPlan("madpo_iter", a, ctx({ kernels: "fused" })), lora: adapter }).estimate;
    const bytes = (e: typeof full, label: string) => e.items.filter((i) => i.label.includes(label)).reduce((t, i) => t + i.bytes, 0);
    const w = modelSizes(model).parameters * 4;
    expect(bytes(lora, "base weights")).toBe(w); // two agents, one base
    expect(bytes(lora, "LoRA adapter and its AdamW moments")).toBe(2 * 3 * 5000 * 4);
    expect(bytes(lora, "LoRA adapter gradients")).toBe(5000 * 4);
    // The fused AdamW keeps 3 copies of the parameter it updates: the largest factor's, not the embedding's.
    expect(bytes(lora, "optimizer-step temporaries")).toBe(3 * 1024 * 4);
    expect(bytes(full, "optimizer-step temporaries")).toBe(3 * modelSizes(model).largestParameter * 4);
    expect(lora.tensorBytes).toBeLessThan(full.tensorBytes - w);
  });

  it("bf16 LoRA: the base is held in bfloat16 alone (2 bytes a parameter), after loading in float32 (4)", () => {
    const a = MADPOIterConfig({ comparator_policy: "current", preference_num_candidates: 2, generation_batch_size: 2, train_batch_size: 1, max_new_tokens: 1 });
    const adapter = { adapterParameters: 5000, bases: 1, largestFactor: 1024, adapterWidths: 0 };
    const tiny = ctx({ kernels: "aten", promptTokens: 1, items: 1 });
    const f32 = runMemoryEstimate({ ...runMemoryPlan("madpo_iter", a, tiny), lora: adapter }).estimate;
    const bf16 = runMemoryEstimate({ ...runMemoryPlan("madpo_iter", { ...a, bf16: true }, tiny), lora: adapter });
    const params = modelSizes(model).parameters;
    const bytes = (e: typeof f32, label: string) => e.items.filter((i) => i.label.includes(label)).reduce((t, i) => t + i.bytes, 0);
    expect(bytes(f32, "base weights 0")).toBe(4 * params);
    expect(bytes(bf16.estimate, "base weights 0 (frozen")).toBe(2 * params);
    expect(bf16.estimate.items.some((i) => i.label.includes("bfloat16 copy"))).toBe(false);
    // One token's generation and step are smaller than the float32 load: that is the run's peak.
    expect(bf16.largestPhase).toBe("loading");
    expect(bytes(bf16.estimate, "loading: base weights 0 in float32")).toBe(2 * params);
  });

  it("libtorch: fully trained agents that step one after another add blocks kept for reuse (0.6 of a gradient set); one agent or LoRA agents do not", () => {
    const a = MADPOIterConfig({ comparator_policy: "current" });
    const kept = (agents: number, lora: boolean, kernels: "aten" | "fused") => {
      const plan = runMemoryPlan("madpo_iter", a, ctx({ kernels, agents: Array(agents).fill(model) }));
      if (lora) plan.lora = { adapterParameters: 5000, bases: 1, largestFactor: 1024, adapterWidths: 100 };
      return runMemoryEstimate(plan).estimate.items.filter((i) => i.label.endsWith("blocks kept for reuse between agents' steps"));
    };
    expect(kept(2, false, "aten").map((i) => i.bytes)).toEqual([0.6 * modelSizes(model).parameters * 4]);
    expect(kept(1, false, "aten")).toEqual([]);
    expect(kept(2, true, "aten")).toEqual([]);
    expect(kept(2, false, "fused")).toEqual([]);
  });

  it("libtorch: the process's own memory is in the total as resident host memory, not in what the check asks for", () => {
    const plan = runMemoryPlan("madpo", MADPOConfig({}), ctx({ kernels: "fused" }));
    const without = runMemoryEstimate(plan).estimate;
    const withProcess = runMemoryEstimate({ ...plan, processBytes: 300e6 }).estimate;
    expect(withProcess.tensorBytes).toBe(without.tensorBytes);
    expect(withProcess.hostBytes - without.hostBytes).toBe(300e6);
    expect(withProcess.items.find((i) => i.bytes === 300e6)?.label).toMatch(/^this process besides its tensors/);
  });

  it("needs an agent", () => {
    expect(() => runMemoryEstimate({ ...runMemoryPlan("madpo", MADPOConfig({}), ctx()), agents: [] })).toThrow(/at least one agent/);
  });
});

// The suite's backend decides: on cpu (no limit) nothing is refused.
const limited = memoryCapacity().limitBytes !== undefined;

describe.skipIf(!limited)(`a run that cannot fit stops before writing anything (${memoryCapacity().backend})`, () => {
  it("MADPO with a training batch far too large for the heap", async () => {
    const output = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-memory-")), "run");
    const trainer = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: countE,
      args: small({ output_dir: output, train_batch_size: 20_000, max_new_tokens: 256 }),
    });
    try {
      const err = await trainer.train().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MemoryBudgetError);
      expect((err as Error).message).toMatch(
        /^this madpo run \(2 agents, prompts up to \d+ tokens, [\d.]+ [KMG]B of weights loaded; its largest phase is the training step\) needs about [\d.]+ GB of tensor memory, more than the \w+ backend can hold/,
      );
      expect((err as Error).message).toMatch(/training step: activations of 40000 sequences × \d+ tokens/);
      expect((err as Error).message).toMatch(/What to do: train on fewer sequences at once \(train_batch_size/);
      expect(existsSync(output)).toBe(false);
    } finally {
      trainer.dispose();
    }
  });

  it("iterative MADPO whose generate calls are far too large", async () => {
    const output = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-memory-")), "run");
    const many = Array.from({ length: 2000 }, (_, i) => ({ id: `q${i}`, prompt: `Item ${i} says` }));
    const trainer = new MADPOIterTrainer({
      agentModel: TINY,
      trainDataset: many,
      rewardFunc: countE,
      args: {
        ...small({ output_dir: output, preference_num_candidates: 80, generation_batch_size: 160_000, max_new_tokens: 64 }),
        num_iterations: 1,
        comparator_policy: "current_copy",
      },
    });
    try {
      const err = await trainer.train().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MemoryBudgetError);
      expect((err as Error).message).toMatch(/its largest phase is the generation\)/);
      expect((err as Error).message).toMatch(/generation: comparator's copy of agent 0 .*\n.*generation: comparator's copy of agent 1/);
      // 2000 prompts run their prompt pass once each, for their 80 candidates.
      expect((err as Error).message).toMatch(/forward pass over 2000 rows × \d+ tokens[^\n]*\n[^\n]*KV cache \(160000 rows/);
      expect((err as Error).message).toMatch(/What to do: generate fewer rows at once \(generation_batch_size, preference_num_candidates\)/);
      expect(existsSync(output)).toBe(false);
    } finally {
      trainer.dispose();
    }
  });
});
