// MADPO against the PyTorch reference (scripts/reference/make_madpo_fixtures.py): two tiny
// agents of different architectures and a fixed set of pairs.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, nativeThreads, readSafetensors, tf, useBackend } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { agentLoss, agentMargins, madpoLoss, jointMargins, othersSum } from "../src/index.js";
import { describeEachBackend, expectCloseToReference, MODEL_FIXTURES } from "@pbrl/test-fixtures";

const FIX = path.join(import.meta.dirname, "fixtures");
const MODELS = MODEL_FIXTURES;
interface Ref {
  beta: number;
  pairs: { prompt: number[]; winner: number[]; loser: number[] }[][];
  exclude_last: { margins: number[][]; joint_loss: number; agent_losses: number[] };
  score_last: { margins: number[][]; joint_loss: number; agent_losses: number[] };
  single_agent: { loss: number; margins: number[] };
}
const ref = JSON.parse(readFileSync(path.join(FIX, "madpo_reference.json"), "utf8")) as Ref;
const tokens = (agent: number): AgentPairTokens[] =>
  ref.pairs.map((p) => ({ promptIds: p[agent]!.prompt, winnerIds: p[agent]!.winner, loserIds: p[agent]!.loser }));
const PADS = [0, 381];

function margins(models: CausalLM[], scoreLastToken: boolean): number[][] {
  return models.map((m, i) => tf.tidy(() => Array.from(agentMargins(m, tokens(i), { scoreLastToken, padTokenId: PADS[i]! }).dataSync())));
}

async function expectGradsClose(grads: Map<string, tf.Tensor>, file: string): Promise<void> {
  expectCloseToReference(grads, (await readSafetensors(path.join(FIX, file))).tensors, 1e-4, { label: `${file}: largest gradient difference` });
}

// native and libtorch need the addons the install step builds; without one its cases skip, saying
// why, unless PBRL_REQUIRE_NATIVE=1 / PBRL_REQUIRE_LIBTORCH=1 (CI where they build) makes them fail.
const ADDONS = { native: loadNativeAddon(), libtorch: loadLibtorchAddon(nativeThreads()) };

describeEachBackend("MADPO parity with PyTorch on $backend", ADDONS, (backend) => {
  let models: CausalLM[];
  beforeAll(async () => {
    await useBackend(backend);
    models = [(await loadPretrained(path.join(MODELS, "tiny-llama"))).model, (await loadPretrained(path.join(MODELS, "tiny-qwen2"))).model];
  });
  afterAll(() => models.forEach((m) => m.dispose()));

  it.each([false, true])("margins and joint loss (score_last_token=%s)", (scoreLast) => {
    const r = scoreLast ? ref.score_last : ref.exclude_last;
    const m = margins(models, scoreLast);
    m.forEach((row, i) => row.forEach((v, p) => expect(Math.abs(v - r.margins[i]![p]!)).toBeLessThanOrEqual(1e-4)));
    expect(Math.abs(madpoLoss(jointMargins(m), ref.beta) - r.joint_loss)).toBeLessThanOrEqual(1e-5);
  });

  it("each agent's loss within 1e-5 and gradient within 1e-4", async () => {
    const detached = margins(models, false);
    for (let i = 0; i < 2; i++) {
      const model = models[i]!;
      const { value, grads } = tf.variableGrads(
        () => agentLoss(agentMargins(model, tokens(i), { scoreLastToken: false, padTokenId: PADS[i]! }), othersSum(detached, i), ref.beta),
        model.trainableVariables(),
      );
      expect(Math.abs(value.dataSync()[0]! - ref.exclude_last.agent_losses[i]!)).toBeLessThanOrEqual(1e-5);
      const named = model.gradsByWeightName(grads);
      await expectGradsClose(named, `madpo_grads_agent${i}.safetensors`);
      tf.dispose([value, ...named.values()]);
    }
  });

  it("one agent: −log σ(β(log π(w) − log π(l))), loss and gradient", async () => {
    const model = models[0]!;
    const { value, grads } = tf.variableGrads(
      () => agentLoss(agentMargins(model, tokens(0), { scoreLastToken: false, padTokenId: 0 }), new Float32Array(ref.pairs.length), ref.beta),
      model.trainableVariables(),
    );
    expect(Math.abs(value.dataSync()[0]! - ref.single_agent.loss)).toBeLessThanOrEqual(1e-5);
    const named = model.gradsByWeightName(grads);
    await expectGradsClose(named, "madpo_grads_single.safetensors");
    tf.dispose([value, ...named.values()]);
  });

  it("through LoRA agents (PEFT's adapters on both): each agent's loss within 1e-5 and its adapter's gradient within 1e-4", async () => {
    const lora = JSON.parse(readFileSync(path.join(FIX, "madpo_lora_reference.json"), "utf8")) as { margins: number[][]; agent_losses: number[] };
    const agents = [
      (await loadPretrained(path.join(MODELS, "lora", "tiny-llama"), { baseModel: path.join(MODELS, "tiny-llama") })).model,
      (await loadPretrained(path.join(MODELS, "lora", "tiny-qwen2"), { baseModel: path.join(MODELS, "tiny-qwen2") })).model,
    ];
    const detached = margins(agents, false);
    detached.forEach((row, i) => row.forEach((v, p) => expect(Math.abs(v - lora.margins[i]![p]!)).toBeLessThanOrEqual(1e-4)));
    for (let i = 0; i < 2; i++) {
      const model = agents[i]!;
      const { value, grads } = tf.variableGrads(
        () => agentLoss(agentMargins(model, tokens(i), { scoreLastToken: false, padTokenId: PADS[i]! }), othersSum(detached, i), ref.beta),
        model.trainableVariables(),
      );
      expect(Math.abs(value.dataSync()[0]! - lora.agent_losses[i]!)).toBeLessThanOrEqual(1e-5);
      const named = model.gradsByWeightName(grads);
      await expectGradsClose(named, `madpo_lora_grads_agent${i}.safetensors`);
      tf.dispose([value, ...named.values()]);
    }
    agents.forEach((m) => m.dispose());
  });
});
