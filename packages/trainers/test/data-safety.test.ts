// Issue 17, cases 2–5 and the config.json secrets of case 6: a run that cannot start, or starts
// in the wrong place, leaves every existing file as it was; resume checks what it finds.
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CheckpointError, ConfigError, MADPOIterTrainer, MADPOTrainer, type MADPOIterConfigInput } from "../src/index.js";
import { RunDirError } from "../src/run-dir.js";
import { RunLockError } from "../src/run-lock.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-safety-"));
const quiet = { verbose: false, eval_interval: 0 };
const trainer = (args: MADPOIterConfigInput, more: Partial<ConstructorParameters<typeof MADPOIterTrainer>[0]> = {}) =>
  new MADPOIterTrainer({ ...ITERATIVE_RUN, ...more, args: { ...ITERATIVE_RUN.args, ...quiet, ...args } });
async function run(args: MADPOIterConfigInput, more: Partial<ConstructorParameters<typeof MADPOIterTrainer>[0]> = {}) {
  const t = trainer(args, more);
  try {
    return await t.train();
  } finally {
    t.dispose();
  }
}

/** Every file under `dir` with its sha256: equal snapshots mean nothing was touched. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const f = path.join(dir, rel);
    out[rel] = statSync(f).isDirectory() ? "dir" : createHash("sha256").update(readFileSync(f)).digest("hex");
  }
  return out;
}

describe("never lose a user's data", () => {
  let finished: string;
  beforeAll(async () => {
    finished = tmp();
    await run({ num_iterations: 2, output_dir: finished });
  }, 240_000);

  it("case 2/3: a fresh run into a finished run's folder is refused before anything is written", async () => {
    const before = snapshot(finished);
    await expect(run({ num_iterations: 1, output_dir: finished })).rejects.toThrow(RunDirError);
    await expect(run({ num_iterations: 1, output_dir: finished })).rejects.toThrow(/already holds a run's results .*overwrite_output_dir=true/);
    expect(snapshot(finished)).toEqual(before);
  });

  it("case 2: a failed resume (a formatter that throws, a comparator that cannot start) changes no file, and the run still resumes", async () => {
    const dir = tmp();
    await run({ num_iterations: 1, output_dir: dir });
    const before = snapshot(dir);
    const badFormatter = () => {
      throw new Error("no field 'question' in this item");
    };
    await expect(run({ num_iterations: 2, output_dir: dir, resume_from_checkpoint: true }, { formatters: [badFormatter, badFormatter] })).rejects.toThrow(
      /question/,
    );
    expect(snapshot(dir)).toEqual(before);
    // a fresh run whose API comparator cannot start (its key variable is unset) never creates output_dir
    const fresh = path.join(tmp(), "run");
    await expect(
      run({
        num_iterations: 1,
        output_dir: fresh,
        comparator_policy: "api",
        comparator_history_k: null,
        comparator_api_url: "http://127.0.0.1:9/v1",
        comparator_api_key_env: "PBRL_TEST_UNSET_KEY_VARIABLE",
      }),
    ).rejects.toThrow(/PBRL_TEST_UNSET_KEY_VARIABLE/);
    expect(existsSync(fresh)).toBe(false);
    const resumed = await run({ num_iterations: 2, output_dir: dir, resume_from_checkpoint: true });
    expect(resumed.resumedAfterRound).toBe(1);
  });

  it("case 3: overwrite_output_dir=true replaces the earlier run's outputs, so none of its later rounds stay beside the new ones", async () => {
    const dir = tmp();
    await run({ num_iterations: 2, output_dir: dir });
    writeFileSync(path.join(dir, "notes.txt"), "mine");
    await run({ num_iterations: 1, output_dir: dir, overwrite_output_dir: true, seed: 12 });
    expect(readdirSync(path.join(dir, "checkpoints")).sort()).toEqual(["initial", "latest.json", "round_0001"]);
    expect(readdirSync(path.join(dir, "preference_replay")).sort()).toEqual(["iteration_0001.json"]);
    expect(JSON.parse(readFileSync(path.join(dir, "config.json"), "utf8")).seed).toBe(12);
    expect(readFileSync(path.join(dir, "notes.txt"), "utf8")).toBe("mine");
  });

  it("case 4: a second run into an output_dir in use stops at once; the first finishes intact", async () => {
    const dir = tmp();
    const [first, second] = await Promise.allSettled([run({ num_iterations: 1, output_dir: dir }), run({ num_iterations: 1, output_dir: dir })]);
    const outcomes = [first, second].map((r) => r.status);
    expect(outcomes.sort()).toEqual(["fulfilled", "rejected"]);
    const failed = [first, second].find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(failed.reason).toBeInstanceOf(RunLockError);
    const lines = readFileSync(path.join(dir, "metrics.jsonl"), "utf8").trim().split("\n");
    expect(lines.filter((l) => JSON.parse(l).kind === "round")).toHaveLength(1);
    expect(existsSync(path.join(dir, "run.lock"))).toBe(false);
  });

  it("case 5: resume checks every checkpoint file, latest.json, and refuses config changes that alter the run", async () => {
    const dir = tmp();
    await run({ num_iterations: 2, output_dir: dir });
    const resume = (args: MADPOIterConfigInput = {}) => run({ num_iterations: 3, output_dir: dir, resume_from_checkpoint: true, ...args });
    const before = snapshot(dir);
    const tamper = async (rel: string, edit: (b: Buffer) => Buffer, expected: RegExp) => {
      const f = path.join(dir, rel);
      const orig = readFileSync(f);
      writeFileSync(f, edit(orig));
      await expect(resume()).rejects.toThrow(expected);
      writeFileSync(f, orig);
    };
    const flip = (b: Buffer) => {
      const c = Buffer.from(b);
      c.writeUInt8(c.readUInt8(c.length - 3) ^ 0x55, c.length - 3);
      return c;
    };
    await tamper("checkpoints/round_0002/agents/agent_1/model.safetensors", flip, /agent_1.model\.safetensors changed after the checkpoint was written/);
    await tamper("checkpoints/round_0002/optimizer_0.safetensors", flip, /optimizer_0\.safetensors changed/);
    await tamper("checkpoints/round_0002/state.json", (b) => Buffer.from(b.toString().replace('"round": 2', '"round": 1')), /state\.json changed/);
    await tamper("checkpoints/initial/agents/agent_0/model.safetensors", flip, /initial.agents.agent_0.model\.safetensors changed/);
    await tamper(
      "checkpoints/latest.json",
      () => Buffer.from(JSON.stringify({ round: 2, dir: "../../elsewhere" })),
      /names "\.\.\/\.\.\/elsewhere", which is not a round folder/,
    );
    await tamper("checkpoints/latest.json", (b) => b.subarray(0, 9), /not valid JSON.*newest intact checkpoint is .*round_0002/);
    await expect(resume()).resolves.toBeDefined(); // restored: resumes
    expect(snapshot(dir)["checkpoints/round_0003/manifest.json"]).toBeDefined();
    await expect(run({ num_iterations: 4, output_dir: dir, resume_from_checkpoint: true, max_new_tokens: 9 })).rejects.toThrow(ConfigError);
    await expect(run({ num_iterations: 4, output_dir: dir, resume_from_checkpoint: true, max_new_tokens: 9, temperature: 0.5 })).rejects.toThrow(
      /max_new_tokens: the checkpoint .*round_0003 was trained with 6, this run has 9[\s\S]*temperature/,
    );
    expect(before["checkpoints/round_0002/manifest.json"]).toBe(snapshot(dir)["checkpoints/round_0002/manifest.json"]);
    await run({ num_iterations: 4, output_dir: dir, resume_from_checkpoint: true, reward_concurrency: 2 });
    const config = JSON.parse(readFileSync(path.join(dir, "config.json"), "utf8"));
    expect(config.reward_concurrency).toBe(2);
    expect(config.num_iterations).toBe(4);
    expect(config.resume_changes).toEqual([
      { after_round: 2, changes: [{ field: "num_iterations", from: 2, to: 3 }] },
      {
        after_round: 3,
        changes: [
          { field: "num_iterations", from: 3, to: 4 },
          { field: "reward_concurrency", from: 8, to: 2 },
        ],
      },
    ]);
    await expect(
      run({ num_iterations: 4, output_dir: path.join(dir, "checkpoints", "round_0004", "state.json"), resume_from_checkpoint: true }),
    ).rejects.toThrow(/is a file, not a folder/);
    expect(CheckpointError).toBeDefined();
  });

  it("case 6: config.json keeps the API URL's query secrets and credential headers out", async () => {
    const dir = tmp();
    process.env["PBRL_TEST_SAFETY_KEY"] = "sk-in-env";
    try {
      await expect(
        run({
          num_iterations: 1,
          output_dir: dir,
          comparator_policy: "api",
          comparator_history_k: null,
          comparator_api_url: "http://127.0.0.1:9/v1?api_key=SECRET-IN-URL&team=a",
          comparator_api_headers: { "x-api-key": "SECRET-IN-HEADER", "x-team": "blue" },
          comparator_api_key_env: "PBRL_TEST_SAFETY_KEY",
          comparator_api_max_retries: 0,
        }),
      ).rejects.toThrow();
    } finally {
      delete process.env["PBRL_TEST_SAFETY_KEY"];
    }
    const text = readFileSync(path.join(dir, "config.json"), "utf8");
    expect(text).not.toMatch(/SECRET-IN/);
    expect(JSON.parse(text).comparator_api_headers["x-team"]).toBe("blue");
    expect(JSON.parse(text).comparator_api_url).toMatch(/team=a/);
  });

  it("MADPO (one-shot) refuses to write over a finished run too, and an empty dataset is an error before output_dir exists", async () => {
    const args = small({ num_train_epochs: 1, eval_interval: 0 });
    const first = new MADPOTrainer({ agentModel: TINY, trainDataset: items.slice(0, 2), rewardFunc: countE, args });
    await first.train();
    first.dispose();
    const dir = String(args.output_dir);
    const before = snapshot(dir);
    const again = new MADPOTrainer({ agentModel: TINY, trainDataset: items.slice(0, 2), rewardFunc: countE, args });
    await expect(again.train()).rejects.toThrow(/already holds a run's results \(config\.json, metrics\.jsonl, preference_pairs\.json, agents\)/);
    again.dispose();
    expect(snapshot(dir)).toEqual(before);
    const fresh = path.join(tmp(), "run");
    await expect(run({ output_dir: fresh }, { trainDataset: [] })).rejects.toThrow(/train_dataset: is empty/);
    expect(existsSync(fresh)).toBe(false);
    // case 8: prompts plus max_new_tokens beyond the model's context stop before output_dir exists
    await expect(run({ output_dir: fresh, max_new_tokens: 255 })).rejects.toThrow(
      /max_new_tokens=255 needs \d+ positions, more than this model's max_position_embeddings \(256\)/,
    );
    await expect(run({ output_dir: fresh, max_new_tokens: 250, max_prompt_length: 8 })).rejects.toThrow(/max_position_embeddings/);
    expect(existsSync(fresh)).toBe(false);
  });
});

// Issue 28, part 3: a run deletes only what it wrote, inside its own folders, and never an input.
describe("a run deletes only what it wrote", () => {
  it("preference_replay_dir or policy_checkpoint_dir naming a folder of the user's is refused, with overwrite_output_dir too, and the folder is left as it was", async () => {
    const project = tmp();
    writeFileSync(path.join(project, "package.json"), '{"name": "mine"}');
    mkdirSync(path.join(project, "src"));
    writeFileSync(path.join(project, "src", "index.ts"), "export {};\n");
    const before = snapshot(project);
    for (const field of ["preference_replay_dir", "policy_checkpoint_dir"] as const) {
      const out = path.join(tmp(), "run");
      await expect(run({ num_iterations: 1, output_dir: out, [field]: project, overwrite_output_dir: true })).rejects.toThrow(
        new RegExp(`${field} .* holds package\\.json, src, which pbrl did not write there.*Choose a new or empty folder for ${field}`),
      );
      const refusal = await run({ num_iterations: 1, output_dir: out, [field]: project }).catch((err: Error) => err);
      expect(refusal).toBeInstanceOf(RunDirError);
      expect((refusal as Error).message).not.toMatch(/overwrite_output_dir=true/);
      expect(snapshot(project)).toEqual(before);
    }
    // an empty folder (or a new one) is fine, and it gets its own list of what pbrl wrote there
    const replay = path.join(tmp(), "replay");
    await run({ num_iterations: 1, output_dir: path.join(tmp(), "run"), preference_replay_dir: replay });
    expect(readdirSync(replay).sort()).toEqual([".pbrl-run.json", "iteration_0001.json"]);
  });

  it("output_dir equal to the agents' model folder, or inside a dataset folder, is refused before anything is written", async () => {
    const model = path.join(tmp(), "model");
    cpSync(TINY, model, { recursive: true });
    const before = snapshot(model);
    for (const overwrite_output_dir of [true, false]) {
      await expect(run({ num_iterations: 1, output_dir: model, overwrite_output_dir }, { agentModel: model })).rejects.toThrow(
        /output_dir .*model is the agent_model .*model, which the run reads; pbrl never writes its run files into an input/,
      );
    }
    expect(snapshot(model)).toEqual(before);
    const data = tmp();
    writeFileSync(path.join(data, "train.jsonl"), '{"prompt": "x"}\n');
    await expect(run({ num_iterations: 1, output_dir: path.join(data, "run") }, { inputPaths: { train_dataset: data } })).rejects.toThrow(
      /output_dir .*run lies inside the train_dataset/,
    );
    expect(readdirSync(data)).toEqual(["train.jsonl"]);
  });

  it("a finished MADPO run whose agents were moved away is not started again over its pairs and metrics", async () => {
    const args = small({ num_train_epochs: 1, eval_interval: 0 });
    const first = new MADPOTrainer({ agentModel: TINY, trainDataset: items.slice(0, 2), rewardFunc: countE, args });
    await first.train();
    first.dispose();
    const dir = String(args.output_dir);
    renameSync(path.join(dir, "agents"), path.join(tmp(), "agents-kept"));
    const before = snapshot(dir);
    const again = new MADPOTrainer({ agentModel: TINY, trainDataset: items.slice(0, 2), rewardFunc: countE, args });
    await expect(again.train()).rejects.toThrow(/already holds a run's results \(config\.json, metrics\.jsonl, preference_pairs\.json\)/);
    again.dispose();
    expect(snapshot(dir)).toEqual(before);
  });
});
