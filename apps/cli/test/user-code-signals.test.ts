// Issue 28, "Safe anywhere": user code that never returns (a formatters module, a model's chat
// template) no longer holds the CLI's thread, so SIGINT/SIGTERM always work: while the run starts
// (prompts are rendered then, before output_dir is touched), the first signal stops it with exit
// code 130 and nothing written; in a round, which runs no formatter or template any more, a second
// signal exits at once and the run resumes. A 100 MB single-line prompt is an error in seconds.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileCli, packagesBuilt } from "./compiled-cli.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  err: string;
  out: string;
  /** Seconds from the first signal sent (or from the start, when none was) to the exit. */
  seconds: number;
}

/**
 * `pbrl train` with `args`; `signals` are sent (in turn, `gapMs` apart) once `ready()` holds (checked
 * on every stderr chunk and every 200 ms). A run still alive `limitS` seconds later is killed (SIGKILL).
 */
function train(
  main: string,
  args: string[],
  o: { ready?: (err: string) => boolean; signals?: NodeJS.Signals[]; gapMs?: number; limitS: number },
): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, "train", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    let out = "";
    let from = Date.now();
    let sent = false;
    const check = () => {
      if (sent || o.signals === undefined || o.ready?.(err) === false) return;
      sent = true;
      from = Date.now();
      o.signals.forEach((s, i) => setTimeout(() => child.kill(s), i * (o.gapMs ?? 500)));
    };
    const poll = setInterval(check, 200);
    const limit = setTimeout(() => child.kill("SIGKILL"), o.limitS * 1000);
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => ((err += d.toString()), check()));
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearInterval(poll);
      clearTimeout(limit);
      resolve({ code, signal, err, out, seconds: (Date.now() - from) / 1000 });
    });
  });
}

const dir = mkdtempSync(path.join(tmpdir(), "pbrl-user-code-"));
const file = (name: string, text: string) => (writeFileSync(path.join(dir, name), text), path.join(dir, name));
const jsonl = (items: object[]) => items.map((i) => JSON.stringify(i)).join("\n") + "\n";
const reward = file("reward.mjs", "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).split('e').length);\n");
const train3 = file("train.jsonl", jsonl(["The cat", "We drink", "A bird"].map((prompt, i) => ({ id: `t${i}`, prompt }))));
/** After the agents are loaded (both before and since prompts are rendered at start-up). */
const loaded = (err: string) => /pbrl: tensor backend/.test(err);
const base = (out: string) => [`agent_model=${TINY_LLAMA}`, `train_dataset=${train3}`, `reward_func=${reward}`, "max_new_tokens=4", `output_dir=${out}`];

/** tiny-llama whose chat template runs `onSpin` first when the first message holds "spin". */
function modelWithTemplate(onSpin: string): string {
  const model = mkdtempSync(path.join(dir, "model-"));
  cpSync(TINY_LLAMA, model, { recursive: true });
  const config = JSON.parse(readFileSync(path.join(model, "tokenizer_config.json"), "utf8")) as Record<string, unknown>;
  config["chat_template"] = `{% if 'spin' in messages[0]['content'] %}${onSpin}{% endif %}${String(config["chat_template"])}`;
  writeFileSync(path.join(model, "tokenizer_config.json"), JSON.stringify(config));
  return model;
}
const chatEval = file("eval.jsonl", jsonl(["Snow falls", "spin the wheel"].map((content, i) => ({ id: `e${i}`, prompt: [{ role: "user", content }] }))));
const chatTrain = file("chat-train.jsonl", jsonl(["The cat", "We drink"].map((content, i) => ({ id: `t${i}`, prompt: [{ role: "user", content }] }))));

describe.skipIf(!packagesBuilt)("user code that never returns, and signals", () => {
  let main: string;
  let cleanup: () => void;
  beforeAll(async () => {
    ({ main, cleanup } = await compileCli());
  }, 300_000);
  afterAll(() => {
    cleanup?.();
    rmSync(dir, { recursive: true, force: true }); // a 100 MB data set among them
  });

  it("a formatters module that would loop in round 2 never runs in a round: SIGINT twice exits at once with 130, leaving no run.lock, and the run resumes", async () => {
    // 3 items × 2 agents: its 13th call loops (the start-up check and round 1 used to make 12).
    const formatters = file(
      "loop-in-round-2.mjs",
      "let calls = 0;\nexport const formatters = (item) => { if (++calls > 12) for (;;) {} return item.prompt; };\n",
    );
    const out = path.join(dir, "round-2-out");
    const args = [...base(out), `formatters=${formatters}`, "trainer=madpo_iter", "num_iterations=6", "preference_num_candidates=2", "eval_interval=0"];
    const latest = path.join(out, "checkpoints", "latest.json");
    // The second signal 50 ms after the first, while round 2 still runs: 300 ms let a fast machine end
    // the round first, so that the signal met the process's own exit (death by SIGINT, code null).
    const stopped = await train(main, args, { ready: () => existsSync(latest), signals: ["SIGINT", "SIGINT"], gapMs: 50, limitS: 180 });
    expect(stopped.code, stopped.err).toBe(130);
    expect(stopped.seconds, stopped.err).toBeLessThan(15);
    expect(stopped.err).toMatch(/SIGINT received; finishing round and checkpoint, then stopping/);
    // The second signal's exit takes the run lock with it.
    expect(existsSync(path.join(out, "run.lock"))).toBe(false);
    const round = (JSON.parse(readFileSync(latest, "utf8")) as { round: number }).round;
    const resumed = await train(main, [...args, "resume_from_checkpoint=true"], { limitS: 180 });
    expect(resumed.code, resumed.err).toBe(0);
    expect(resumed.err).toMatch(new RegExp(`resumed from .*round_000${round} after round ${round}`));
    expect(JSON.parse(readFileSync(latest, "utf8"))).toMatchObject({ round: 6 });
  }, 400_000);

  it("a formatters module that loops on an item while the run starts: SIGTERM stops it at once (130, output_dir untouched); reward_timeout_s names the item", async () => {
    const formatters = file("loop-on-t1.mjs", "export const formatters = (item) => { if (item.id === 't1') for (;;) {} return item.prompt; };\n");
    const out = path.join(dir, "startup-out");
    const args = [...base(out), `formatters=${formatters}`, "trainer=madpo_iter", "num_iterations=2"];
    const stopped = await train(main, args, { ready: loaded, signals: ["SIGTERM"], limitS: 120 });
    expect(stopped.code, stopped.err).toBe(130);
    expect(stopped.seconds).toBeLessThan(10);
    expect(stopped.err).toMatch(/pbrl train: RunStoppedError: SIGTERM received while the run was starting: it stopped before writing anything to output_dir/);
    expect(existsSync(out)).toBe(false);
    const timedOut = await train(main, [...args, "reward_timeout_s=2"], { limitS: 120 });
    expect(timedOut.code, timedOut.err).toBe(2);
    expect(timedOut.err).toContain(
      `pbrl train: FormatterError: the formatter of agent 0 did not finish on train_dataset item 1 (id "t1"): formatters in ${formatters} did not return within reward_timeout_s=2 s, so its worker thread was stopped`,
    );
    expect(existsSync(out)).toBe(false);
  }, 300_000);

  it("a chat template that loops on an eval item: SIGINT while the run starts exits at once with 130, leaving no output_dir (no run.lock)", async () => {
    const model = modelWithTemplate("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    const out = path.join(dir, "template-loop-out");
    const args = [
      `agent_model=${model}`,
      `train_dataset=${chatTrain}`,
      `eval_dataset=${chatEval}`,
      `reward_func=${reward}`,
      "max_new_tokens=4",
      `output_dir=${out}`,
    ];
    const stopped = await train(main, [...args, "trainer=madpo_iter", "num_iterations=2"], { ready: loaded, signals: ["SIGINT"], limitS: 120 });
    expect(stopped.code, stopped.err).toBe(130);
    expect(stopped.seconds).toBeLessThan(10);
    expect(stopped.err).toMatch(/RunStoppedError: SIGINT received while the run was starting/);
    expect(existsSync(out)).toBe(false);
  }, 300_000);

  it("a chat template that runs out of memory on an eval item is a start-up error naming it, not an abort of pbrl", async () => {
    const model = modelWithTemplate("{% for i in range(60000000) %}{% endfor %}");
    const out = path.join(dir, "template-oom-out");
    const args = [
      `agent_model=${model}`,
      `train_dataset=${chatTrain}`,
      `eval_dataset=${chatEval}`,
      `reward_func=${reward}`,
      "max_new_tokens=4",
      `output_dir=${out}`,
    ];
    const failed = await train(main, [...args, "trainer=madpo_iter", "num_iterations=2"], { limitS: 180 });
    expect(failed.code, failed.err).toBe(2);
    expect(failed.err).toMatch(
      /pbrl train: ChatTemplateError: eval_dataset item 1 \(id "e1"\): agent 0's chat template failed on the prompt's messages: its process ended/,
    );
    expect(existsSync(out)).toBe(false);
  }, 300_000);

  it("a 100 MB single-line prompt is a PromptTooLongError within seconds", async () => {
    const huge = "the cat sat on the mat ".repeat(Math.ceil((100 * 2 ** 20) / 23)).slice(0, 100 * 2 ** 20);
    const data = file(
      "huge.jsonl",
      jsonl([
        { id: "huge", prompt: huge },
        { id: "small", prompt: "We drink" },
      ]),
    );
    const out = path.join(dir, "huge-out");
    const failed = await train(main, [`agent_model=${TINY_LLAMA}`, `train_dataset=${data}`, `reward_func=${reward}`, "max_new_tokens=4", `output_dir=${out}`], {
      limitS: 120,
    });
    console.log(`pbrl train with a 100 MB single-line prompt ended in ${failed.seconds.toFixed(1)} s (process start, data and model loading included)`);
    expect(failed.code, failed.err).toBe(2);
    expect(failed.err).toContain(
      `pbrl train: PromptTooLongError: train_dataset item 0 (id "huge"): agent 0's prompt is 104857600 bytes (UTF-8), so at least 8738134 tokens (this tokenizer's longest token is 12 bytes): more than the model's context holds (max_position_embeddings=256); set max_prompt_length`,
    );
    expect(failed.seconds).toBeLessThan(60);
    expect(existsSync(out)).toBe(false);
  }, 300_000);
});
