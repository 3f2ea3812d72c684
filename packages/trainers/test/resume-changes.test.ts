import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config/define-config.js";
import { checkResumeChanges, configChanges, RESUMABLE_FIELDS } from "../src/resume-changes.js";

describe("what a resume may change", () => {
  it("lists every field whose value differs, in field order, with both values", () => {
    const saved = { trainer: "madpo_iter", num_iterations: 4, max_new_tokens: 6, comparator_api_headers: { a: "1" }, verbose: true };
    const now = { trainer: "madpo_iter", num_iterations: 6, max_new_tokens: 6, comparator_api_headers: { a: "2" }, verbose: true, extra: null };
    expect(configChanges(saved, now)).toEqual([
      { field: "comparator_api_headers", from: { a: "1" }, to: { a: "2" } },
      { field: "extra", from: undefined, to: null },
      { field: "num_iterations", from: 4, to: 6 },
    ]);
    expect(configChanges(saved, { ...saved })).toEqual([]);
    // how a start was asked for is not a change of the run
    expect(
      configChanges(
        { ...saved, resume_from_checkpoint: null, overwrite_output_dir: false },
        { ...saved, resume_from_checkpoint: true, overwrite_output_dir: true },
      ),
    ).toEqual([]);
  });

  it("a MARLHF checkpoint from when its configs had madpo_score_last_token (at its default) resumes; one that set it is a change", () => {
    const now = { trainer: "marlhf_iter", num_iterations: 4 };
    expect(configChanges({ ...now, madpo_score_last_token: false }, now)).toEqual([]);
    expect(configChanges({ ...now, madpo_score_last_token: true }, now)).toEqual([{ field: "madpo_score_last_token", from: true, to: undefined }]);
    // MADPO's own configs still compare it
    expect(configChanges({ ...now, madpo_score_last_token: false }, { ...now, madpo_score_last_token: true })).toHaveLength(1);
  });

  it("allows where/how-fast/how-long/logging fields and refuses the ones that change what the run learns, naming each", () => {
    const ok = [
      { field: "num_iterations", from: 4, to: 6 },
      { field: "reward_concurrency", from: 8, to: 2 },
    ];
    expect(checkResumeChanges(ok, "ck/round_0002")).toEqual(ok);
    let err: unknown;
    try {
      checkResumeChanges([...ok, { field: "max_new_tokens", from: 6, to: 9 }, { field: "comparator_policy", from: "history", to: "current" }], "ck/round_0002");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toMatch(/max_new_tokens: the checkpoint ck\/round_0002 was trained with 6, this run has 9/);
    expect(msg).toMatch(/comparator_policy: .*"history", this run has "current"/);
    expect(msg).not.toMatch(/num_iterations|reward_concurrency/);
  });

  it("keeps what the run learns from out of the resumable list", () => {
    for (const f of [
      "seed",
      "max_new_tokens",
      "temperature",
      "comparator_policy",
      "preference_replay_mode",
      "dpo_beta",
      "agent_learning_rate",
      "pair_selection",
      "num_agents",
      "bf16",
      "max_prompt_length",
      "generation_batch_size",
    ]) {
      expect(RESUMABLE_FIELDS.has(f), f).toBe(false);
    }
  });
});

describe("fields added after a checkpoint was written", () => {
  it("a checkpoint without use_peft, lora_* or the memory controls resumes with their defaults, and not with other values", () => {
    const saved = { trainer: "madpo_iter", dpo_beta: 0.1 };
    const current = {
      ...saved,
      use_peft: false,
      lora_r: 16,
      lora_alpha: 32,
      lora_dropout: 0.05,
      lora_target_modules: null,
      use_rslora: false,
      gradient_checkpointing: false,
      gradient_accumulation_steps: 1,
    };
    expect(configChanges(saved, current)).toEqual([]);
    expect(configChanges(saved, { ...current, use_peft: true })).toEqual([{ field: "use_peft", from: false, to: true }]);
  });
});
