// A run killed with SIGKILL in the middle of round 3 and resumed ends with the same agent
// weights, round files and metrics as an uninterrupted run with the same seed.
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { MADPOIterTrainer } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { runChild, startChild } from "./child/run-child.js";
import { untimedMetrics } from "./untimed-metrics.js";

/** Runs the child; with `killWhen`, kills it with SIGKILL when its output matches. */
async function runUntil(trainer: string, out: string, resume: boolean, killWhen?: RegExp) {
  if (killWhen === undefined) return { ...(await runChild(trainer, out, resume)), signal: null };
  const run = startChild(trainer, out, resume);
  run.onOutput((stdout) => {
    if (killWhen.test(stdout) && run.child.exitCode === null) run.child.kill("SIGKILL");
  });
  return run.exited;
}

const files = (dir: string) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => !f.startsWith("."))
        .sort()
    : [];
const bytes = (f: string) => readFileSync(f);

describe("kill and resume", () => {
  it.each(["madpo_iter", "marlhf_iter"])(
    "%s: SIGKILL mid round 3, then resume_from_checkpoint=true, equals the uninterrupted run",
    async (trainer) => {
      const base = mkdtempSync(path.join(tmpdir(), "pbrl-resume-"));
      const straight = path.join(base, "straight");
      const killed = path.join(base, "killed");
      const [full, cut] = await Promise.all([runUntil(trainer, straight, false), runUntil(trainer, killed, false, /PBRL pbrl: round 3: /)]);
      expect(full.stdout).toMatch(/PBRL done straight/);
      expect(cut.signal).toBe("SIGKILL");
      expect(cut.stdout).not.toMatch(/PBRL done/);
      expect(JSON.parse(readFileSync(path.join(killed, "checkpoints", "latest.json"), "utf8")).round).toBe(2);
      const resumed = await runUntil(trainer, killed, true);
      expect(resumed.stdout).toMatch(/resumed from .*round_0002 after round 2/);

      for (const i of [0, 1]) {
        expect(
          bytes(path.join(killed, "agents", `agent_${i}`, "model.safetensors")).equals(bytes(path.join(straight, "agents", `agent_${i}`, "model.safetensors"))),
        ).toBe(true);
      }
      const rounds = files(path.join(straight, "preference_replay"));
      expect(rounds).toEqual(["iteration_0001.json", "iteration_0002.json", "iteration_0003.json", "iteration_0004.json"]);
      expect(files(path.join(killed, "preference_replay"))).toEqual(rounds);
      for (const f of rounds)
        expect(readFileSync(path.join(killed, "preference_replay", f), "utf8")).toBe(readFileSync(path.join(straight, "preference_replay", f), "utf8"));
      for (const f of files(path.join(straight, "reward_distributions"))) {
        expect(readFileSync(path.join(killed, "reward_distributions", f), "utf8")).toBe(readFileSync(path.join(straight, "reward_distributions", f), "utf8"));
      }
      expect(untimedMetrics(path.join(killed, "metrics.jsonl"))).toEqual(untimedMetrics(path.join(straight, "metrics.jsonl")));
      expect(
        bytes(path.join(killed, "checkpoints", "round_0004", "optimizer_1.safetensors")).equals(
          bytes(path.join(straight, "checkpoints", "round_0004", "optimizer_1.safetensors")),
        ),
      ).toBe(true);
      if (trainer === "marlhf_iter") {
        // round 3 was labelled by the reward model restored from round 2's checkpoint
        expect(JSON.parse(readFileSync(path.join(killed, "preference_replay", "iteration_0003.json"), "utf8")).scorer).toBe("reward_model");
        const head = (dir: string) => bytes(path.join(dir, "checkpoints", "round_0004", "reward_model", "reward_head.safetensors"));
        expect(head(killed).equals(head(straight))).toBe(true);
      }
    },
    300_000,
  );
});

/** Everything a run leaves that a resume must reproduce: agent weights, round files, metrics, the last optimizer state. */
function runOutputs(dir: string) {
  const rounds = files(path.join(dir, "preference_replay"));
  return {
    agents: [0, 1].map((i) => bytes(path.join(dir, "agents", `agent_${i}`, "model.safetensors")).toString("base64")),
    rounds: rounds.map((f) => readFileSync(path.join(dir, "preference_replay", f), "utf8")),
    metrics: untimedMetrics(path.join(dir, "metrics.jsonl")),
    optimizer: bytes(path.join(dir, "checkpoints", "round_0003", "optimizer_1.safetensors")).toString("base64"),
  };
}

describe("resume with the other pair selections and replay modes", () => {
  // Round 3 draws from the stream or reads the replay index the checkpoint after round 2 restored.
  it.each([
    ["pair_selection=random", { pair_selection: "random" }],
    ["nearest_k (k=2)", { preference_replay_mode: "nearest_k", preference_replay_k: 2, preference_replay_lambda: null }],
    ["all_history", { preference_replay_mode: "all_history", preference_replay_lambda: null }],
  ] as const)(
    "%s: stopped after round 2 and resumed, equals the uninterrupted run",
    async (_name, mode) => {
      const base = mkdtempSync(path.join(tmpdir(), "pbrl-resume-mode-"));
      const run = async (dir: string, rounds: number, resume: boolean) => {
        const t = new MADPOIterTrainer({
          ...ITERATIVE_RUN,
          handleSignals: false,
          args: { ...ITERATIVE_RUN.args, ...mode, num_iterations: rounds, resume_from_checkpoint: resume, output_dir: dir, verbose: false },
        });
        const r = await t.train();
        t.dispose();
        return r;
      };
      const straight = await run(path.join(base, "straight"), 3, false);
      await run(path.join(base, "split"), 2, false);
      const resumed = await run(path.join(base, "split"), 3, true);
      expect(resumed.resumedAfterRound).toBe(2);
      // round 3 trained on pairs: the restored streams and replay index were used
      expect(straight.rounds[2]!.trainPairs).toBeGreaterThan(0);
      expect(runOutputs(path.join(base, "split"))).toEqual(runOutputs(path.join(base, "straight")));
    },
    120_000,
  );
});
