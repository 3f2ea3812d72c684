// Training checkpoints on real folders, without training: a real AdamW after one hand-checked
// step, a round folder assembled with its manifest, found again by latest.json or by path, and
// every way a resume refuses a checkpoint, with the message that says what to do.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { AdamW, liveTensorCount, RngStreams, tf, variableFrom, writeSafetensors } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { OnDiskReplayBuffer } from "@pbrl/replay";
import { describe, expect, it } from "vitest";
import { writeManifest } from "../src/checkpoint-manifest.js";
import { resolveAgents } from "../src/agents.js";
import type { Learner } from "../src/learner.js";
import { checkpointToResume, restoreFromCheckpoint } from "../src/round-resume.js";
import {
  CheckpointError,
  loadTrainingCheckpoint,
  policiesAtStartOf,
  roundDirName,
  saveInitialPolicies,
  saveTrainingCheckpoint,
  type TrainingState,
} from "../src/training-checkpoint.js";
import { TINY } from "./small-madpo-run.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-ckpt-"));

/** AdamW(lr 0.01, betas 0.8/0.95, eps 1e-6, weight decay 0.1) after one step with gradient g = [0.1, 0.2, 0.3]. */
function steppedOptimizer(): AdamW {
  const w = variableFrom(tf.tensor1d([1, 2, 3]));
  const frozen = variableFrom(tf.tensor1d([5]));
  const opt = new AdamW(
    new Map([
      ["w", w],
      ["b", frozen],
    ]),
    { lr: 0.01, betas: [0.8, 0.95], eps: 1e-6, weightDecay: 0.1 },
  );
  const g = tf.tensor1d([0.1, 0.2, 0.3]);
  opt.step(new Map([["w", g]]));
  g.dispose();
  return opt;
}

function state(round: number, more: Partial<TrainingState> = {}): TrainingState {
  return {
    format: "pbrl-training-checkpoint/1",
    trainer: "madpo_iter",
    round,
    counters: { updates: 6, envStep: 12, lastLogged: 10 },
    rng: { seed: 7, streams: {} },
    replay: { entries: [] } as never,
    metricsLines: 9,
    numAgents: 1,
    seed: 7,
    ...more,
  };
}

/** Writes round `round`'s checkpoint under root with one stepped optimizer and an agents/agent_0 folder. */
async function saveRound(root: string, round: number, more: Partial<TrainingState> = {}): Promise<string> {
  return saveTrainingCheckpoint(root, state(round, more), [], [steppedOptimizer()], async (dir) => {
    mkdirSync(path.join(dir, "agents", "agent_0"), { recursive: true });
    writeFileSync(path.join(dir, "agents", "agent_0", "weights.txt"), `round ${round}`);
  });
}

async function message(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CheckpointError);
    return (err as Error).message;
  }
  throw new Error("expected a CheckpointError");
}

const jsonError = (text: string) => {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  return "";
};

describe("round folders", () => {
  it("are round_ and the round with at least four digits; round r starts from round r-1's agents, round 1 from initial", () => {
    expect(roundDirName(7)).toBe("round_0007");
    expect(roundDirName(12345)).toBe("round_12345");
    expect(policiesAtStartOf("/ck", 1)).toBe(path.join("/ck", "initial", "agents"));
    expect(policiesAtStartOf("/ck", 0)).toBe(path.join("/ck", "initial", "agents"));
    expect(policiesAtStartOf("/ck", 2)).toBe(path.join("/ck", "round_0001", "agents"));
    expect(policiesAtStartOf("/ck", 11)).toBe(path.join("/ck", "round_0010", "agents"));
  });
});

describe("saveTrainingCheckpoint and loadTrainingCheckpoint", () => {
  it("a round folder holds state.json (config redacted), the optimizer, what extra wrote and a manifest; latest.json names it", async () => {
    const root = tmp();
    const config = { trainer: "madpo_iter", comparator_api_key: "sk-abcdefghijklmnopqrstuvwx", num_iterations: 3 };
    const dir = await saveRound(root, 2, { config });
    expect(dir).toBe(path.join(root, "round_0002"));
    expect(readFileSync(path.join(root, "latest.json"), "utf8")).toBe('{\n  "round": 2,\n  "dir": "round_0002"\n}\n');
    const saved = JSON.parse(readFileSync(path.join(dir, "state.json"), "utf8"));
    expect(saved).toEqual({ ...state(2), config: { trainer: "madpo_iter", comparator_api_key: "[REDACTED]", num_iterations: 3 } });
    expect(readFileSync(path.join(dir, "state.json"), "utf8")).toBe(JSON.stringify(saved, null, 2) + "\n");
    const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8"));
    expect(Object.keys(manifest.files)).toEqual(["agents/agent_0/weights.txt", "optimizer_0.safetensors", "state.json"]);
    // without a config, state.json is the state as given
    const other = tmp();
    await saveRound(other, 1);
    expect(JSON.parse(readFileSync(path.join(other, "round_0001", "state.json"), "utf8"))).toEqual(state(1));
  });

  it("reads back the state and the optimizer's moments, step counts and settings, by latest.json or by path", async () => {
    const root = tmp();
    await saveRound(root, 1);
    await saveRound(root, 2);
    const byLatest = await loadTrainingCheckpoint(true, root);
    expect(byLatest.dir).toBe(path.join(root, "round_0002"));
    expect(byLatest.agentsDir).toBe(path.join(root, "round_0002", "agents"));
    expect(byLatest.state).toEqual(state(2));
    expect(byLatest.optimizers).toHaveLength(1);
    const o = byLatest.optimizers[0]!;
    expect({ lr: o.lr, betas: o.betas, eps: o.eps, weightDecay: o.weightDecay, steps: o.steps }).toEqual({
      lr: 0.01,
      betas: [0.8, 0.95],
      eps: 1e-6,
      weightDecay: 0.1,
      steps: { w: 1 },
    });
    // m = (1 - 0.8)·g, v = (1 - 0.95)·g²; b had no gradient, so no state (as PyTorch)
    expect([...o.expAvg.keys()]).toEqual(["w"]);
    expect([...o.expAvgSq.keys()]).toEqual(["w"]);
    const close = (a: Float32Array, b: number[]) => b.forEach((x, i) => expect(a[i]).toBeCloseTo(x, 7));
    close(o.expAvg.get("w")!, [0.02, 0.04, 0.06]);
    close(o.expAvgSq.get("w")!, [0.0005, 0.002, 0.0045]);
    expect(o.expAvg.get("w")).toHaveLength(3);
    // the root given as a path: its latest; a round folder given: that round
    expect((await loadTrainingCheckpoint(root, "/elsewhere")).dir).toBe(path.join(root, "round_0002"));
    const first = await loadTrainingCheckpoint(path.join(root, "round_0001"), root);
    expect(first.dir).toBe(path.join(root, "round_0001"));
    expect(first.state.round).toBe(1);
  });

  it("saveInitialPolicies writes initial/ with a manifest, and a damaged initial/ stops a resume", async () => {
    const root = tmp();
    await saveInitialPolicies(root, []);
    expect(JSON.parse(readFileSync(path.join(root, "initial", "manifest.json"), "utf8"))).toEqual({ format: "pbrl-checkpoint-manifest/1", files: {} });
    await saveRound(root, 1);
    await expect(loadTrainingCheckpoint(true, root)).resolves.toMatchObject({ dir: path.join(root, "round_0001") });
    writeFileSync(path.join(root, "initial", "manifest.json"), "{");
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(
      `resume_from_checkpoint: ${path.join(root, "initial", "manifest.json")} is damaged, so the checkpoint's files cannot be checked; it was not written completely by pbrl. Resume from an earlier round folder, or start the run again`,
    );
  });
});

describe("loadTrainingCheckpoint refuses", () => {
  it("a root without latest.json, and a path that does not exist", async () => {
    const root = tmp();
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(
      `resume_from_checkpoint: no checkpoint under ${root} (latest.json is missing); nothing to resume — start without resume_from_checkpoint`,
    );
    const gone = path.join(root, "nope");
    expect(await message(loadTrainingCheckpoint(gone, root))).toBe(`resume_from_checkpoint: ${gone} does not exist`);
    // a folder without latest.json is taken as a round folder
    expect(await message(loadTrainingCheckpoint(root, "/elsewhere"))).toBe(
      `resume_from_checkpoint: ${root} is not a pbrl training checkpoint (it has no state.json)`,
    );
  });

  it("a latest.json that is not JSON, or names no round folder, pointing to the newest intact round", async () => {
    const root = tmp();
    await saveRound(root, 1);
    await saveRound(root, 2);
    await saveRound(root, 3);
    // round 3 damaged, round 2's agent changed: round 1 is the newest intact one
    writeFileSync(path.join(root, "round_0003", "manifest.json"), "{");
    writeFileSync(path.join(root, "round_0002", "agents", "agent_0", "weights.txt"), "edited");
    // a folder not named round_NNNN is never advised, even when intact
    mkdirSync(path.join(root, "round_9"));
    await writeManifest(path.join(root, "round_9"));
    const latest = path.join(root, "latest.json");
    const hint = `The newest intact checkpoint is ${path.join(root, "round_0001")}: set resume_from_checkpoint to that folder to continue from it`;
    writeFileSync(latest, '{"dir": ');
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(`resume_from_checkpoint: ${latest} is not valid JSON (${jsonError('{"dir": ')}). ${hint}`);
    for (const [text, named] of [
      ['{"dir": "../round_0001"}', '"../round_0001"'],
      ['{"dir": "round_12"}', '"round_12"'],
      ['{"dir": "xround_0001"}', '"xround_0001"'],
      ['{"dir": "round_0001x"}', '"round_0001x"'],
      ['{"dir": 3}', "3"],
      ['{"round": 3}', "undefined"],
      ["null", "undefined"],
    ] as const) {
      writeFileSync(latest, text);
      expect(await message(loadTrainingCheckpoint(true, root))).toBe(
        `resume_from_checkpoint: ${latest} names ${named}, which is not a round folder of ${root} (round_NNNN). ${hint}`,
      );
    }
    writeFileSync(latest, '{"dir": "round_12345"}');
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(
      `resume_from_checkpoint: ${path.join(root, "round_12345")} is not a pbrl training checkpoint (it has no state.json)`,
    );
    // no intact round left
    rmSync(path.join(root, "round_0001", "state.json"));
    writeFileSync(latest, "[");
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(
      `resume_from_checkpoint: ${latest} is not valid JSON (${jsonError("[")}). No intact round folder was found under it; start the run again`,
    );
  });

  it("a latest.json that cannot be read, and the newest of several intact rounds named", async () => {
    const root = tmp();
    for (const round of [3, 1, 6, 2, 5, 4]) await saveRound(root, round);
    writeFileSync(path.join(root, "round_0006", "manifest.json"), "{");
    const latest = path.join(root, "latest.json");
    rmSync(latest);
    mkdirSync(latest);
    const hint = `The newest intact checkpoint is ${path.join(root, "round_0005")}: set resume_from_checkpoint to that folder to continue from it`;
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(
      `resume_from_checkpoint: ${latest} cannot be read (EISDIR: illegal operation on a directory, read). ${hint}`,
    );
  });

  it("a round folder whose files do not match its manifest", async () => {
    const root = tmp();
    const dir = await saveRound(root, 1);
    writeFileSync(path.join(dir, "agents", "agent_0", "weights.txt"), "round 9");
    const target = path.join(dir, "agents", "agent_0", "weights.txt");
    expect(await message(loadTrainingCheckpoint(true, root))).toMatch(
      new RegExp(`^resume_from_checkpoint: ${target.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} changed after the checkpoint was written \\(7 bytes`),
    );
  });

  it("a state.json of another format, or a state.json that is not JSON", async () => {
    const dir = tmp();
    writeFileSync(path.join(dir, "state.json"), JSON.stringify({ ...state(1), format: "pbrl-training-checkpoint/2" }));
    await writeManifest(dir);
    expect(await message(loadTrainingCheckpoint(dir, "/elsewhere"))).toBe(
      `resume_from_checkpoint: ${dir}/state.json has format "pbrl-training-checkpoint/2", expected "pbrl-training-checkpoint/1"`,
    );
    writeFileSync(path.join(dir, "state.json"), "{");
    await writeManifest(dir);
    expect(await message(loadTrainingCheckpoint(dir, "/elsewhere"))).toBe(
      `resume_from_checkpoint: ${path.join(dir, "state.json")} is not valid JSON (${jsonError("{")})`,
    );
  });

  it("a missing optimizer file, one without pbrl's metadata, and a missing agent folder, each named", async () => {
    const root = tmp();
    const dir = await saveRound(root, 1, { numAgents: 2 });
    const opt1 = path.join(dir, "optimizer_1.safetensors");
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(`resume_from_checkpoint: ${opt1} is missing`);
    await writeSafetensors(opt1, new Map([["exp_avg.w", { tensor: { dtype: "float32", shape: [1], data: new Float32Array([1]) }, dtype: "F32" }]]));
    await writeManifest(dir);
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(`${opt1} is not a pbrl optimizer state (no pbrl_adamw metadata)`);
    await writeSafetensors(opt1, new Map(), { pbrl_adamw: JSON.stringify({ lr: 1, betas: [0, 0], eps: 0, weightDecay: 0, steps: {} }) });
    await writeManifest(dir);
    expect(await message(loadTrainingCheckpoint(true, root))).toBe(`resume_from_checkpoint: ${path.join(dir, "agents", "agent_1")} is missing`);
    mkdirSync(path.join(dir, "agents", "agent_1"));
    const loaded = await loadTrainingCheckpoint(true, root);
    expect(loaded.optimizers.map((o) => o.lr)).toEqual([0.01, 1]);
    // a tensor of neither moment is no moment
    const f32 = (x: number) => ({ tensor: { dtype: "float32" as const, shape: [1], data: new Float32Array([x]) }, dtype: "F32" as const });
    await writeSafetensors(
      opt1,
      new Map([
        ["exp_avg.w", f32(1)],
        ["exp_avg_sq.w", f32(2)],
        ["other.w", f32(3)],
      ]),
      { pbrl_adamw: JSON.stringify({ lr: 1, betas: [0, 0], eps: 0, weightDecay: 0, steps: { w: 1 } }) },
    );
    await writeManifest(dir);
    const moments = (await loadTrainingCheckpoint(true, root)).optimizers[1]!;
    expect([...moments.expAvg].map(([k, v]) => [k, [...v]])).toEqual([["w", [1]]]);
    expect([...moments.expAvgSq].map(([k, v]) => [k, [...v]])).toEqual([["w", [2]]]);
    expect(existsSync(loaded.agentsDir)).toBe(true);
  });
});

describe("checkpointToResume", () => {
  const run = (ckptRoot: string, more: Record<string, unknown> = {}) => ({
    resume: true,
    spec: true as string | boolean | null,
    ckptRoot,
    trainerName: "madpo_iter",
    numAgents: 1,
    seed: 7,
    numRounds: 4,
    record: { trainer: "madpo_iter", num_iterations: 4, max_new_tokens: 8 },
    ...more,
  });

  it("a run that does not resume reads nothing", async () => {
    expect(await checkpointToResume(run("/does/not/exist", { resume: false }))).toEqual({ ckpt: undefined, changes: [] });
  });

  it("continues the newest checkpoint, or the one named, with the changes it allows", async () => {
    const root = tmp();
    await saveRound(root, 1, { config: { trainer: "madpo_iter", num_iterations: 2, max_new_tokens: 8 } });
    await saveRound(root, 2, { config: { trainer: "madpo_iter", num_iterations: 2, max_new_tokens: 8 } });
    const latest = await checkpointToResume(run(root));
    expect(latest.ckpt?.dir).toBe(path.join(root, "round_0002"));
    expect(latest.changes).toEqual([{ field: "num_iterations", from: 2, to: 4 }]);
    const named = await checkpointToResume(run("/elsewhere", { spec: path.join(root, "round_0001") }));
    expect(named.ckpt?.dir).toBe(path.join(root, "round_0001"));
    // only a path names a checkpoint; anything else continues the newest
    expect((await checkpointToResume(run(root, { spec: null }))).ckpt?.dir).toBe(path.join(root, "round_0002"));
    // a checkpoint without a config (an older pbrl) has no changes to name
    const old = tmp();
    await saveRound(old, 1);
    expect((await checkpointToResume(run(old, { record: { anything: 1 } }))).changes).toEqual([]);
  });

  it("refuses another trainer's checkpoint, other agents or seed, a round past num_iterations, and a change of what the run learns", async () => {
    const root = tmp();
    await saveRound(root, 3, { config: { trainer: "madpo_iter", num_iterations: 4, max_new_tokens: 8 } });
    const dir = path.join(root, "round_0003");
    expect(await message(checkpointToResume(run(root, { trainerName: "marlhf_iter" })))).toBe(
      `resume_from_checkpoint: ${dir} was written by trainer=madpo_iter; this run is trainer=marlhf_iter`,
    );
    const other = `resume_from_checkpoint: ${dir} was written by a run with 1 agents and seed 7; this run has`;
    expect(await message(checkpointToResume(run(root, { numAgents: 2 })))).toBe(`${other} 2 and 7`);
    expect(await message(checkpointToResume(run(root, { seed: 8 })))).toBe(`${other} 1 and 8`);
    expect(await message(checkpointToResume(run(root, { numRounds: 2 })))).toBe(
      `resume_from_checkpoint: ${dir} is after round 3, beyond num_iterations=2; raise num_iterations to continue past it`,
    );
    // round 3 of num_iterations=3 is the end of the run, which may still be resumed (to finish it)
    expect((await checkpointToResume(run(root, { numRounds: 3, record: { trainer: "madpo_iter", num_iterations: 4, max_new_tokens: 8 } }))).changes).toEqual(
      [],
    );
    await expect(checkpointToResume(run(root, { record: { trainer: "madpo_iter", num_iterations: 4, max_new_tokens: 9 } }))).rejects.toThrow(
      `max_new_tokens: the checkpoint ${dir} was trained with 8, this run has 9; a resume must keep it (set it back, or start a new run in another output_dir)`,
    );
  });
});

describe("restoreFromCheckpoint", () => {
  it("puts back each agent's weights, its optimizer, every stream, the replay index, the learner's state and the counters", async () => {
    const root = tmp();
    const loaded = await loadPretrained(TINY);
    const [source] = await resolveAgents({ agents: [loaded.model], tokenizer: loaded.tokenizer!, numAgents: 1 });
    // the run at its checkpoint: streams drawn from, one round stored, an optimizer stepped
    const streams = new RngStreams(7);
    streams.get("sampling").nextUint32();
    streams.get("replay").nextUint32();
    const replayDir = path.join(root, "replay");
    const stored = new OnDiskReplayBuffer({ mode: "all_history", dir: replayDir, rng: streams.get("replay") });
    const record = {
      prompts: ["p a0", "p a1"],
      winner_completions: ["win a0", "win a1"],
      loser_completions: ["lose a0", "lose a1"],
      winner_reward: 1,
      loser_reward: 0,
      candidate_reward_mean: 0.5,
    };
    await stored.addRound(1, [{ record, tokens: [], itemIndex: 0 }]);
    const opt = steppedOptimizer();
    const saved = state(1, { rng: streams.getState(), replay: stored.getState(), counters: { updates: 3, envStep: 9, lastLogged: 8 } });
    await saveInitialPolicies(path.join(root, "ck"), [source!]);
    expect(readdirSync(policiesAtStartOf(path.join(root, "ck"), 1))).toEqual(["agent_0"]);
    await saveTrainingCheckpoint(path.join(root, "ck"), saved, [source!], [opt]);
    const ckpt = await loadTrainingCheckpoint(true, path.join(root, "ck"));

    // a fresh start: other weights, a fresh optimizer, fresh streams, an empty index, zero counters
    const target = source!.model.clone();
    const zeros = new Map([...target.hostWeights()].map(([n, t]) => [n, { ...t, data: new Float32Array(t.data.length) }]));
    target.assignHostWeights(zeros as never);
    const agent = { ...source!, model: target };
    const fresh = new AdamW(new Map([["w", variableFrom(tf.tensor1d([0, 0, 0]))]]), { lr: 0.5, betas: [0.8, 0.95], eps: 1e-6, weightDecay: 0.1 });
    const freshStreams = new RngStreams(7);
    const replay = new OnDiskReplayBuffer({ mode: "all_history", dir: replayDir, rng: freshStreams.get("replay") });
    const restored: { dir: string; agents: unknown }[] = [];
    // The learner is the trainer's plug-in point: MADPO's keeps nothing, so this one records what it is handed.
    const learner = { restoreState: async (dir: string, agents: unknown) => void restored.push({ dir, agents }) } as unknown as Learner;
    const counters = { updates: 0, envStep: 0, lastLogged: undefined as number | undefined };
    const live = liveTensorCount();
    await restoreFromCheckpoint({ ckpt, agents: [agent], optimizers: [fresh], streams: freshStreams, replay, learner, counters });
    // the copy read from disk is freed once its weights are copied over
    expect(liveTensorCount()).toBe(live);

    const host = (m: typeof target) => [...m.hostWeights()].map(([n, t]) => [n, [...t.data]]);
    expect(host(target)).toEqual(host(source!.model));
    const back = fresh.getState();
    expect({ lr: back.lr, steps: back.steps }).toEqual({ lr: 0.01, steps: { w: 1 } });
    [0.02, 0.04, 0.06].forEach((x, i) => expect(back.expAvg.get("w")![i]).toBeCloseTo(x, 7));
    expect(freshStreams.getState()).toEqual(streams.getState());
    expect(replay.getState()).toEqual(stored.getState());
    expect(replay.getState().entries).toHaveLength(1);
    expect(restored).toEqual([{ dir: path.join(root, "ck", "round_0001"), agents: [agent] }]);
    expect(counters).toEqual({ updates: 3, envStep: 9, lastLogged: 8 });
    source!.model.dispose();
    target.dispose();
  });
});
