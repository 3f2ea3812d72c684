import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config/define-config.js";
import { checkpointConfig, checkResumeChanges, configChanges, RESUMABLE_FIELDS } from "../src/resume-changes.js";

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

describe("the fields a resume may change, and how a refusal reads", () => {
  it("each field about how long, where and how fast, and what is logged or saved at the end may change", () => {
    const resumable = [
      "num_iterations",
      "backend",
      "agent_devices",
      "reference_devices",
      "comparator_devices",
      "critic_devices",
      "reward_model_device",
      "parallel_training",
      "reward_concurrency",
      "reward_timeout_s",
      "comparator_api_timeout",
      "comparator_api_max_concurrency",
      "comparator_api_max_retries",
      "comparator_api_max_response_bytes",
      "comparator_api_key_env",
      "comparator_api_headers",
      "verbose",
      "logging_steps",
      "eval_interval",
      "eval_num_samples",
      "eval_batch_size",
      "save_dtype",
      "report_to",
      "push_to_hub",
      "hub_model_id",
      "hub_private_repo",
    ];
    for (const field of resumable) expect(checkResumeChanges([{ field, from: 1, to: 2 }], "ck"), field).toEqual([{ field, from: 1, to: 2 }]);
    expect([...RESUMABLE_FIELDS].sort()).toEqual([...resumable].sort());
  });

  it("a refusal is a ConfigError of the resume, one line per field", () => {
    let err: unknown;
    try {
      checkResumeChanges(
        [
          { field: "seed", from: 1, to: 2 },
          { field: "comparator_policy", from: "history", to: "current" },
        ],
        "/runs/a/checkpoints/round_0002",
      );
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(
      [
        "invalid resume (fields that must keep the checkpoint's values):",
        "  - seed: the checkpoint /runs/a/checkpoints/round_0002 was trained with 1, this run has 2; a resume must keep it (set it back, or start a new run in another output_dir)",
        '  - comparator_policy: the checkpoint /runs/a/checkpoints/round_0002 was trained with "history", this run has "current"; a resume must keep it (set it back, or start a new run in another output_dir)',
      ].join("\n"),
    );
  });

  it("where the run folder is and how the start was asked for are never changes, and are left out of a checkpoint", () => {
    const start = { output_dir: "/a", resume_from_checkpoint: null, overwrite_output_dir: false };
    expect(
      configChanges({ trainer: "madpo_iter", ...start }, { trainer: "madpo_iter", output_dir: "/b", resume_from_checkpoint: true, overwrite_output_dir: true }),
    ).toEqual([]);
    expect(checkpointConfig({ trainer: "madpo_iter", num_iterations: 2, ...start })).toEqual({ trainer: "madpo_iter", num_iterations: 2 });
  });

  it("a MADPO config keeping madpo_score_last_token at its default is no change (the field is still its own)", () => {
    const madpo = { trainer: "madpo_iter", madpo_score_last_token: false };
    expect(configChanges(madpo, { ...madpo })).toEqual([]);
  });
});
