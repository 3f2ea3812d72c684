// Bad input through the CLI: exit code 2 and a message naming the file, the place and the fix.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;
const DEMO = path.resolve(import.meta.dirname, "../assets/demo-model");
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function project(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-bad-input-"));
  writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink"].map((prompt) => JSON.stringify({ prompt })).join("\n") + "\n");
  writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).length);\n");
  return dir;
}
const train = (dir: string, ...extra: string[]) =>
  runCli([
    "train",
    `agent_model=${TINY}`,
    `train_dataset=${path.join(dir, "train.jsonl")}`,
    `reward_func=${path.join(dir, "reward.mjs")}`,
    `output_dir=${path.join(dir, "out")}`,
    "preference_num_candidates=2",
    "max_new_tokens=3",
    "verbose=false",
    ...extra,
  ]);

describe("pbrl config validate TRAINER FILE", () => {
  it("refuses a file whose trainer key names another trainer, naming both", async () => {
    const dir = project();
    const file = path.join(dir, "run.yaml");
    writeFileSync(file, "trainer: madpo_iter\nnum_iterations: 2\n");
    const r = await runCli(["config", "validate", "marlhf_iter", file]);
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toMatch(new RegExp(`the command line names trainer marlhf_iter, but ${escape(file)} says trainer: madpo_iter`));
    const same = await runCli(["config", "validate", "madpo_iter", file]);
    expect(same.code, same.err).toBe(0);
    expect(JSON.parse(same.out)).toMatchObject({ trainer: "madpo_iter", num_iterations: 2 });
    const override = await runCli(["config", "validate", "madpo", "trainer=marlhf"]);
    expect(override.code).toBe(2);
    expect(override.err).toMatch(/names trainer madpo, but the trainer=… override says trainer: marlhf/);
  });
});

describe("files that are not UTF-8", () => {
  it("a Latin-1 dataset: exit 2 naming the file, the byte offset and the line; nothing is trained", async () => {
    const dir = project();
    const file = path.join(dir, "train.jsonl");
    writeFileSync(file, Buffer.concat([Buffer.from('{"prompt": "The cat"}\n{"prompt": "caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]));
    const r = await train(dir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`train_dataset file ${escape(file)} is not valid UTF-8 text: invalid UTF-8 at byte offset 37 \\(line 2; bytes 0xE9`));
  });

  it("a run file in Latin-1", async () => {
    const dir = project();
    const file = path.join(dir, "run.yaml");
    writeFileSync(file, Buffer.concat([Buffer.from("trainer: madpo\n# r"), Buffer.from([0xe9]), Buffer.from("sum\n")]));
    const r = await runCli(["train", "--config", file]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`config file ${escape(file)} is not valid UTF-8 text: invalid UTF-8 at byte offset 18 \\(line 2;`));
  });
});

describe("reward modules", () => {
  it("a syntax error: exit 2 naming the module, line and column, before any model is loaded", async () => {
    const dir = project();
    const file = path.join(dir, "reward.mjs");
    writeFileSync(file, "export function reward_func(c) {\n  return c[0].map((x) => x.length;\n}\n");
    const r = await train(dir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`reward_func: ${escape(file)} has a syntax error at ${escape(file)}:2:28: missing \\) after argument list`));
    expect(r.err).not.toMatch(/tensor backend/);
  });

  it("a reward longer than reward_timeout_s: exit 2 naming the module, the limit and the field", async () => {
    const dir = project();
    const file = path.join(dir, "reward.mjs");
    writeFileSync(file, "export const reward_func = () => { for (;;) {} };\n");
    const r = await train(dir, "reward_timeout_s=1");
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      new RegExp(
        `reward_func in ${escape(file)} did not return within reward_timeout_s=1 s, so its worker thread was stopped; make the function faster, or raise reward_timeout_s \\(null: no limit\\)`,
      ),
    );
  });

  it("reward_processor from the reward module is applied (in the worker)", async () => {
    const dir = project();
    writeFileSync(
      path.join(dir, "reward.mjs"),
      "export const reward_func = (c) => c[0].map((a, j) => 10 + j);\nexport const reward_processor = (r) => r * 100;\n",
    );
    const r = await train(dir, "num_train_epochs=1");
    expect(r.code, r.err).toBe(0);
    const pairs = JSON.parse(readFileSync(path.join(dir, "out", "preference_pairs.json"), "utf8")) as {
      pairs: { winner_reward: number; loser_reward: number }[];
    };
    expect(pairs.pairs[0]).toMatchObject({ winner_reward: 1100, loser_reward: 1000 });
  });
});

describe("pbrl generate --max_new_tokens", () => {
  it("beyond the model's context: exit 2 naming max_position_embeddings, before generating", async () => {
    const r = await runCli(["generate", "--model", DEMO, "--prompt", "Once upon a time", "--max_new_tokens", "1e12", "--backend", "wasm"]);
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toMatch(
      /pbrl generate: --max_new_tokens=1000000000000 after a \d+-token prompt needs \d+ positions, more than this model's max_position_embeddings \(256\); give --max_new_tokens \d+ or fewer, or a shorter prompt/,
    );
  });

  it.each(["1e20", "0", "2.5", "-3"])("%s is not a whole number ≥ 1", async (v) => {
    const r = await runCli(["generate", "--model", DEMO, "--prompt", "Hi", `--max_new_tokens=${v}`]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--max_new_tokens must be a whole number ≥ 1/);
  });
});
