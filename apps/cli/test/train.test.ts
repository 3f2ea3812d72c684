import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;

function project(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-train-"));
  writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink", "A bird"].map((p, i) => JSON.stringify({ id: `t${i}`, topic: p })).join("\n") + "\n");
  writeFileSync(path.join(dir, "eval.json"), JSON.stringify([{ id: "e0", topic: "Snow" }]));
  writeFileSync(
    path.join(dir, "reward.mjs"),
    "export function reward_func(c) { return c[0].map((a, j) => (a + c[1][j]).split('e').length); }\nexport const reward_processor = (r) => r / 10;\n",
  );
  writeFileSync(
    path.join(dir, "run.yaml"),
    [
      "trainer: madpo",
      `agent_model: ${TINY}`,
      "train_dataset: train.jsonl",
      "eval_dataset: eval.json",
      'formatters: ["Write about {topic}:", "Also {topic}, {{braces}}:"]',
      "reward_func: reward.mjs",
      "preference_num_candidates: 3",
      "max_new_tokens: 6",
      "num_train_epochs: 1",
      "eval_interval: 1",
      "verbose: false",
      "output_dir: out",
    ].join("\n") + "\n",
  );
  return dir;
}

describe("pbrl train", () => {
  it("trains from a YAML run file with key=value overrides", async () => {
    const dir = project();
    const out = path.join(dir, "elsewhere");
    const r = await runCli(["train", "--config", path.join(dir, "run.yaml"), `output_dir=${out}`, "temperature=1.0", "top_k=null", "seed=3"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/eval reward before: [\d.]+ \(mean task reward over 1 eval items\)/);
    const cfg = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(cfg).toMatchObject({ trainer: "madpo", temperature: 1, top_k: null, seed: 3, preference_num_candidates: 3 });
    const pairs = JSON.parse(readFileSync(path.join(out, "preference_pairs.json"), "utf8")) as { pairs: { prompts: string[]; winner_reward: number }[] };
    expect(pairs.pairs[0]!.prompts[1]).toMatch(/^Also .*, \{braces\}:$/);
    expect(pairs.pairs[0]!.winner_reward).toBeLessThan(5); // reward_processor divided by 10
    expect(existsSync(path.join(out, "agents", "agent_1", "model.safetensors"))).toBe(true);
  });

  it.each([
    ["marlhf", ["rl_algorithm=mareforce"]],
    ["marlhf_iter", ["num_iterations=2", "rl_algorithm=iac", "use_separate_critic=false", "reference_kl_enabled=true"]],
  ])("trainer=%s: fits the reward model and trains with RL", async (trainer, extra) => {
    const dir = project();
    const out = path.join(dir, "out");
    const r = await runCli([
      "train",
      "--config",
      path.join(dir, "run.yaml"),
      `trainer=${trainer}`,
      "num_generations=2",
      "reward_train_batch_size=2",
      "logging_steps=1",
      ...extra,
    ]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/eval reward after : [\d.]+/);
    const cfg = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(cfg["trainer"]).toBe(trainer);
    const lines = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l["kind"] === "reward" && typeof l["reward/loss"] === "number")).toBe(true);
    expect(lines.some((l) => l["kind"] === "train" && typeof l["agent_1/loss"] === "number")).toBe(true);
    if (trainer === "marlhf") expect(cfg).toMatchObject({ rl_algorithm: "mareinforce", advantage_mode: "raw" });
    else expect(lines.some((l) => typeof l["turn_1/reference_kl_mean"] === "number" && typeof l["agent_0/value_loss"] === "number")).toBe(true);
  });

  it("reports config problems all at once with exit code 2, and unknown keys with a suggestion", async () => {
    const dir = project();
    const r = await runCli(["train", "--config", path.join(dir, "run.yaml"), "dpo_beta=0", "num_train_epocs=2"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/num_train_epocs: unknown key for trainer madpo \(did you mean "num_train_epochs"\?\)/);
    const r2 = await runCli(["train", "--config", path.join(dir, "run.yaml"), "dpo_beta=0", "top_p=3"]);
    expect(r2.code).toBe(2);
    expect(r2.err).toMatch(/dpo_beta: got 0; expected a finite number > 0/);
    expect(r2.err).toMatch(/top_p: got 3; expected a number in \(0, 1\]/);
  });

  it("names bad data, templates and reward modules", async () => {
    const dir = project();
    writeFileSync(path.join(dir, "bad.jsonl"), '{"topic": "x"}\n{not json\n');
    const a = await runCli(["train", "--config", path.join(dir, "run.yaml"), `train_dataset=${path.join(dir, "bad.jsonl")}`]);
    expect(a.err).toMatch(/train_dataset: .*bad\.jsonl line 2 is not valid JSON/);
    const b = await runCli(["train", "--config", path.join(dir, "run.yaml"), "reward_func=sumary_expansion"]);
    expect(b.err).toMatch(/no built-in named "sumary_expansion" \(did you mean "summary_expansion"\?\)/);
    const c = await runCli(["train", "--config", path.join(dir, "run.yaml"), 'formatters=["{missing}", "{topic}"]']);
    expect(c.code).toBe(2);
    expect(c.err).toMatch(/uses \{missing\}, which item "t0" does not have \(fields: id, topic\)/);
    const d = await runCli(["train", "--config", path.join(dir, "nope.yaml")]);
    expect(d.err).toMatch(/cannot read config file .*nope\.yaml: file not found/);
  });
});

describe("pbrl config validate", () => {
  it("prints the normalized config with defaults", async () => {
    const r = await runCli(["config", "validate", "madpo", "num_agents=3", "pair_selection=ALL", "preference_pairs_per_sample=None"]);
    expect(r.code, r.err).toBe(0);
    const c = JSON.parse(r.out) as Record<string, unknown>;
    expect(c).toMatchObject({ trainer: "madpo", num_agents: 3, pair_selection: "all", preference_pairs_per_sample: null, dpo_beta: 0.1, train_batch_size: 2 });
  });

  it("lists every error and exits 2", async () => {
    const r = await runCli(["config", "validate", "madpo", "pair_selection=all", "dpo_beta=-1"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/invalid MADPOConfig:/);
    expect(r.err).toMatch(/dpo_beta: got -1/);
    expect(r.err).toMatch(/preference_pairs_per_sample: got 16; pair_selection="all"/);
    const t = await runCli(["config", "validate", "madpoo"]);
    expect(t.code).toBe(2);
    expect(t.err).toMatch(/trainer: got "madpoo"/);
  });
});
