import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { liveTensorCount } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import {
  readRoundFile,
  type CandidateSet,
  type CollectedPair,
  type Comparator,
  type PairTokenizer,
  type ReplayBuffer,
  type ReplayState,
  type TaskItem,
} from "@pbrl/preference-data";
import { OnDiskReplayBuffer } from "@pbrl/replay";
import { RngStream } from "@pbrl/core-tensor";
import { MADPOIterConfig, MADPOIterTrainer } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-iter-"));
const hashWeights = (m: CausalLM) => {
  const h = createHash("sha256");
  for (const [, t] of m.hostWeights()) h.update(Buffer.from(t.data.buffer));
  return h.digest("hex");
};

/** A replay buffer written here: the real on-disk one, plus notes on what each round started with. */
class RecordingReplay implements ReplayBuffer {
  readonly tensorsAtRound = new Map<number, number>();
  readonly weightsAtRound = new Map<number, string>();
  constructor(
    private readonly inner: ReplayBuffer,
    private readonly model: () => CausalLM,
  ) {}
  async addRound(iteration: number, pairs: readonly CollectedPair[]) {
    // collection is over and training has not started: the agents hold the round's starting weights
    this.tensorsAtRound.set(iteration, liveTensorCount());
    this.weightsAtRound.set(iteration, hashWeights(this.model()));
    await this.inner.addRound(iteration, pairs);
  }
  select(iteration: number, current: readonly CollectedPair[], tokenize: PairTokenizer) {
    return this.inner.select(iteration, current, tokenize);
  }
  getState(): ReplayState {
    return this.inner.getState();
  }
  restore(state: ReplayState) {
    return this.inner.restore(state);
  }
}

/** A comparator written here: always answers with the same two texts, the second unparseable. */
class EchoComparator implements Comparator {
  readonly description = "echo (test)";
  readonly rounds: number[] = [];
  async beginRound(round: number) {
    this.rounds.push(round);
  }
  async sample(_items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    return prompts.map((agents) => ({
      texts: agents.map(() => Array.from({ length: n }, (_, j) => (j % 2 === 0 ? " e e" : ""))),
      valid: Array.from({ length: n }, (_, j) => j % 2 === 0),
    }));
  }
  async endRound() {}
  dispose() {}
}

describe("MADPOIterTrainer", () => {
  it("trains the seed's configuration: MADPOIterConfig({num_agents: 2, lambda_decay, λ 0.8, sample size 256})", async () => {
    const seed = MADPOIterConfig({ num_agents: 2, preference_replay_mode: "lambda_decay", preference_replay_lambda: 0.8, preference_replay_sample_size: 256 });
    expect(seed).toMatchObject({
      num_iterations: 6,
      num_train_epochs: 1,
      preference_num_candidates: 20,
      preference_pairs_per_sample: 4,
      pair_selection: "comparator_reward",
      comparator_policy: "current",
    });
    const out = tmp();
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      args: MADPOIterConfig({
        ...seed,
        num_iterations: 2,
        preference_num_candidates: 3,
        max_new_tokens: 4,
        train_batch_size: 64,
        eval_interval: 0,
        verbose: false,
        output_dir: out,
      }),
    });
    const r = await t.train();
    expect(r.rounds).toHaveLength(2);
    // every round compares and trains: a round without pairs would make the checks below vacuous
    expect(r.rounds.every((x) => x.pairs > 0)).toBe(true);
    expect(r.rounds.map((x) => x.trainPairs)).toEqual([256, 256]);
    // 256 drawn pairs in batches of 64: 4 updates a round
    expect(r.updates).toBe(2 * 4);
    t.dispose();
  });

  it("writes round files (empty ones too), distributions, per-round metrics and checkpoints; a custom comparator and replay buffer plug in", async () => {
    const out = tmp();
    const comparator = new EchoComparator();
    const replay = new RecordingReplay(
      new OnDiskReplayBuffer({ mode: "all_history", dir: path.join(out, "replay"), rng: RngStream.fromSeed(0, "r") }),
      () => undefined as never,
    );
    const trainer = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      comparator,
      replayBuffer: replay,
      rewardRange: [0, 10],
      args: {
        ...ITERATIVE_RUN.args,
        comparator_policy: "current",
        comparator_history_k: null,
        preference_replay_lambda: null,
        preference_replay_sample_size: null,
        preference_replay_mode: "all_history",
        num_iterations: 3,
        output_dir: out,
        verbose: false,
      },
    });
    const agents = await trainer.agents();
    (replay as unknown as { model: () => CausalLM }).model = () => agents[0]!.model;
    const r = await trainer.train();
    expect(comparator.rounds).toEqual([1, 2, 3]);
    // config.json says what ran, not the config's comparator_policy and preference_replay_mode
    const config = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config).toMatchObject({
      comparator_policy: "custom",
      custom_comparator: { name: "unnamed comparator", description: "echo (test)" },
      preference_replay_mode: "custom",
      custom_replay_buffer: { name: "unnamed replay buffer", description: null },
    });
    expect(readdirSync(path.join(out, "replay")).filter((f) => f.endsWith(".json"))).toEqual([
      "iteration_0001.json",
      "iteration_0002.json",
      "iteration_0003.json",
    ]);
    expect(r.rounds.every((x) => x.invalidCandidates.comparator > 0)).toBe(true);
    const dist = JSON.parse(readFileSync(path.join(out, "reward_distributions", "iteration_0002.json"), "utf8")) as {
      reward_min: number;
      reward_max: number;
      candidate: { comparator: { raw_rewards: number[] } };
    };
    expect([dist.reward_min, dist.reward_max]).toEqual([0, 10]);
    const roundLines = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number | string>)
      .filter((l) => l["kind"] === "round");
    expect(roundLines.map((l) => l["iter/current_iteration"])).toEqual([1, 2, 3]);
    for (const key of [
      "iter/current_preference_pairs",
      "iter/total_preference_pairs",
      "iter/train_preference_pairs",
      "iter/comparator_win_rate",
      "iter/invalid_comparator_candidates",
    ])
      expect(roundLines[2]![key]).toBeTypeOf("number");
    expect(readdirSync(path.join(out, "checkpoints")).sort()).toEqual(["initial", "latest.json", "round_0001", "round_0002", "round_0003"]);
    // the live tensor count is the same after round 1 (seen when round 2 stores its pairs), after
    // round 2, and after the last round (round 1 starts before the optimizers have their moments)
    expect(replay.tensorsAtRound.get(3)).toBe(replay.tensorsAtRound.get(2));
    expect(liveTensorCount()).toBe(replay.tensorsAtRound.get(2));
    // each round checkpoint holds the weights the next round started from
    const ckptHash = async (dir: string) => {
      const p = await loadPretrained(path.join(out, "checkpoints", dir, "agents", "agent_0"));
      const h = hashWeights(p.model);
      p.model.dispose();
      return h;
    };
    expect(await ckptHash("initial")).toBe(replay.weightsAtRound.get(1));
    expect(await ckptHash("round_0001")).toBe(replay.weightsAtRound.get(2));
    expect(await ckptHash("round_0002")).toBe(replay.weightsAtRound.get(3));
    expect(replay.weightsAtRound.get(2)).not.toBe(replay.weightsAtRound.get(1));
    trainer.dispose();
  });

  it("history comparator: round t samples the weights round t−k started from", async () => {
    // Rounds whose comparator is the same weights as the agents produce self-play ties only by
    // chance; what matters is which checkpoint it loads. The path rule is checked here; the
    // comparator's sampling from exactly those weights is checked in @pbrl/comparators.
    const { policiesAtStartOf } = await import("../src/training-checkpoint.js");
    expect(policiesAtStartOf("/c", 1)).toBe(path.join("/c", "initial", "agents"));
    expect(policiesAtStartOf("/c", 2)).toBe(path.join("/c", "round_0001", "agents"));
    expect(policiesAtStartOf("/c", 5)).toBe(path.join("/c", "round_0004", "agents"));
  });

  it("a truncated round file, a missing checkpoint and a bad resume path are clear errors that touch nothing", async () => {
    const out = tmp();
    const t = new MADPOIterTrainer({ ...ITERATIVE_RUN, args: { ...ITERATIVE_RUN.args, num_iterations: 2, output_dir: out, verbose: false, eval_interval: 0 } });
    await t.train();
    t.dispose();
    const snapshot = () => readdirSync(out, { recursive: true }).map(String).sort();
    const before = snapshot();
    const file = path.join(out, "preference_replay", "iteration_0001.json");
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.slice(0, text.length - 20));
    const resume = (spec: string | true, dir = out) =>
      new MADPOIterTrainer({
        ...ITERATIVE_RUN,
        args: { ...ITERATIVE_RUN.args, num_iterations: 3, output_dir: dir, verbose: false, resume_from_checkpoint: spec },
      }).train();
    await expect(resume(true)).rejects.toThrow(/iteration_0001\.json/);
    writeFileSync(file, text);
    expect(snapshot()).toEqual(before);
    const metricsBefore = readFileSync(path.join(out, "metrics.jsonl"), "utf8");
    await expect(resume(true, tmp())).rejects.toThrow(/holds no run to resume.*start without resume_from_checkpoint/);
    await expect(resume(path.join(out, "nope"))).rejects.toThrow(/resume_from_checkpoint: .*nope does not exist/);
    await expect(resume(path.join(out, "agents"))).rejects.toThrow(/is not a pbrl training checkpoint \(it has no state\.json\)/);
    expect(readFileSync(path.join(out, "metrics.jsonl"), "utf8")).toBe(metricsBefore);
    expect(existsSync(path.join(out, "checkpoints", "round_0002", "state.json"))).toBe(true);
    const round = await readRoundFile(file);
    expect(round.iteration).toBe(1);
  });
});
