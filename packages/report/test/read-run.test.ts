import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readRun, ReportError, runStatus, type MetricsData } from "../src/index.js";
import { DEAD_PID, EVIL, removeTempDirs, tempDir, THIS_HOST, writeBaseRun, writeIterRun } from "./fixtures.js";

afterAll(removeTempDirs);

describe("readRun on iterative runs", () => {
  it("reads a finished madpo_iter run: config, metrics by kind, rounds, distributions, checkpoint", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 3, roundsWritten: 3, checkpointRound: 3, agentsSaved: true });
    const run = await readRun(dir);
    expect(run.trainer).toBe("madpo_iter");
    expect(run.trainerInferred).toBe(false);
    expect(run.config?.["num_iterations"]).toBe(3);
    expect(run.metrics.byKind.round).toHaveLength(3);
    expect(run.metrics.byKind.train).toHaveLength(9);
    expect(run.metrics.byKind.eval).toHaveLength(2);
    expect(run.rounds.map((r) => [r.iteration, r.numPairs, r.scorer])).toEqual([
      [1, 5, "task"],
      [2, 6, "task"],
      [3, 7, "task"],
    ]);
    expect(run.rounds[0]!.samples.map((s) => s.index)).toEqual([0, 1, 3]);
    expect(run.rounds[0]!.samples[0]!.winnerSide).not.toBeNull();
    expect(run.distributions.map((d) => d.iteration)).toEqual([1, 2, 3]);
    expect(run.checkpoint).toEqual({ round: 3, dir: "round_0003" });
    expect(run.agentsSaved).toBe(true);
    expect(run.status.state).toBe("finished");
    expect(run.status.summary).toBe("finished: 3 of 3 rounds, agents saved");
    expect(run.problems).toEqual([]);
  });

  it("reads a run stopped mid-round: a half-written last metrics line, a round without checkpoint", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, {
      trainer: "madpo_iter",
      numIterations: 4,
      roundsWritten: 3,
      checkpointRound: 2,
      agentsSaved: false,
      halfLine: true,
      lock: { pid: DEAD_PID, host: THIS_HOST },
    });
    const run = await readRun(dir);
    expect(run.metrics.partialLastLine).toBe(true);
    expect(run.metrics.byKind.train).toHaveLength(9);
    expect(run.problems.join("\n")).toMatch(/half-written line/);
    expect(run.lock?.alive).toBe(false);
    expect(run.status).toMatchObject({ state: "stopped", completedRounds: 2, numIterations: 4, unfinishedRound: 3 });
    expect(run.status.summary).toBe(
      "stopped after round 2 of 4 (killed: it left run.lock behind); round 3 was left unfinished; continue it with resume_from_checkpoint=true",
    );
  });

  it("says a run is running while its lock's process lives", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, {
      trainer: "marlhf_iter",
      numIterations: 5,
      roundsWritten: 2,
      checkpointRound: 1,
      agentsSaved: false,
      lock: { pid: process.pid, host: THIS_HOST },
    });
    const run = await readRun(dir);
    expect(run.trainer).toBe("marlhf_iter");
    expect(run.metrics.byKind.reward).toHaveLength(5); // 2 fits × 2 epochs + 1 held-out line
    expect(run.status.state).toBe("running");
    expect(run.status.summary).toBe(`running (pid ${process.pid} on ${THIS_HOST}): round 2 of 5 in progress, 1 round completed`);
  });

  it("cannot tell for a lock taken on another host, and says so", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, {
      trainer: "madpo_iter",
      numIterations: 3,
      roundsWritten: 1,
      checkpointRound: 1,
      agentsSaved: false,
      lock: { pid: 1, host: "some-other-host" },
    });
    const run = await readRun(dir);
    expect(run.lock?.alive).toBeNull();
    expect(run.status.summary).toMatch(/cannot be checked from this host/);
  });

  it("reports a stop before any round completed, and one before the final save", async () => {
    const early = await tempDir();
    await writeIterRun(early, { trainer: "madpo_iter", numIterations: 3, roundsWritten: 1, checkpointRound: null, agentsSaved: false });
    expect((await readRun(early)).status.summary).toBe("stopped in round 1 of 3 before any round completed; a new run starts over");
    const late = await tempDir();
    await writeIterRun(late, { trainer: "madpo_iter", numIterations: 2, roundsWritten: 2, checkpointRound: 2, agentsSaved: false });
    expect((await readRun(late)).status.summary).toMatch(/^stopped after its last round \(2 of 2\) before the final evaluation/);
  });

  it("keeps what it can of a damaged round file and says what was wrong", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 3, roundsWritten: 2, checkpointRound: 2, agentsSaved: false });
    const file = path.join(dir, "preference_replay", "iteration_0002.json");
    writeFileSync(
      file,
      JSON.stringify({
        iteration: 2,
        num_pairs: 3,
        pairs: [
          { prompts: ["a"], winner_completions: ["b"], loser_completions: ["c"], winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 },
          { prompts: [] },
        ],
      }),
    );
    writeFileSync(path.join(dir, "preference_replay", "iteration_0003.json"), `{"iteration":3,"num_pa`);
    writeFileSync(path.join(dir, "reward_distributions", "iteration_0002.json"), `{"iteration":2}`);
    const run = await readRun(dir);
    expect(run.rounds.map((r) => r.numPairs)).toEqual([5, 1, 0]);
    const problems = run.problems.join("\n");
    expect(problems).toMatch(/1 of 2 pairs do not match the pair record schema/);
    expect(problems).toMatch(/says num_pairs 3 but holds 2 pairs/);
    expect(problems).toMatch(/iteration_0003\.json is not valid JSON/);
    expect(problems).toMatch(/iteration_0002\.json: not a reward distribution file/);
    expect(run.distributions.map((d) => d.iteration)).toEqual([1]);
  });

  it("guesses the trainer from the files when config.json is missing", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "marlhf_iter", numIterations: 2, roundsWritten: 1, checkpointRound: 1, agentsSaved: false });
    const { rm } = await import("node:fs/promises");
    await rm(path.join(dir, "config.json"));
    const run = await readRun(dir);
    expect(run.config).toBeNull();
    expect(run.trainer).toBe("marlhf_iter");
    expect(run.trainerInferred).toBe(true);
    expect(run.files.find((f) => f.name === "config.json")?.found).toBe(false);
  });

  it("finds round files in a preference_replay_dir outside the run folder", async () => {
    const dir = await tempDir();
    const elsewhere = await tempDir("pbrl-report-replay-");
    await writeIterRun(dir, {
      trainer: "madpo_iter",
      numIterations: 1,
      roundsWritten: 1,
      checkpointRound: 1,
      agentsSaved: true,
      config: { preference_replay_dir: elsewhere },
    });
    const { rename } = await import("node:fs/promises");
    await rename(path.join(dir, "preference_replay", "iteration_0001.json"), path.join(elsewhere, "iteration_0001.json"));
    const run = await readRun(dir);
    expect(run.rounds.map((r) => r.iteration)).toEqual([1]);
  });
});

describe("readRun on base runs", () => {
  it("reads a finished madpo run with its pairs file", async () => {
    const dir = await tempDir();
    await writeBaseRun(dir, { trainer: "madpo", pairs: 6, agentsSaved: true, evil: true });
    const run = await readRun(dir);
    expect(run.trainer).toBe("madpo");
    expect(run.pairs?.numPairs).toBe(6);
    expect(run.pairs?.samples[0]!.winnerCompletions[0]).toBe(EVIL);
    expect(run.pairs?.samples[0]!.winnerSide).toBeNull();
    expect(run.rounds).toEqual([]);
    expect(run.status.summary).toBe("finished: 6 pairs, 4 updates, agents saved");
  });

  it("says a run without non-tied pairs finished without training", async () => {
    const dir = await tempDir();
    await writeBaseRun(dir, { trainer: "madpo", pairs: 0, agentsSaved: false });
    expect((await readRun(dir)).status.state).toBe("finished");
  });

  it("reads a stopped marlhf run", async () => {
    const dir = await tempDir();
    await writeBaseRun(dir, { trainer: "marlhf", pairs: 4, agentsSaved: false });
    const run = await readRun(dir);
    expect(run.metrics.byKind.reward).toHaveLength(2);
    expect(run.status.summary).toBe("stopped before finishing: 4 pairs, 4 updates");
  });
});

describe("readRun refuses what is not a run", () => {
  it("a missing path, a file, and a folder without run files", async () => {
    const dir = await tempDir();
    await expect(readRun(path.join(dir, "nope"))).rejects.toThrow(ReportError);
    writeFileSync(path.join(dir, "file.txt"), "x");
    await expect(readRun(path.join(dir, "file.txt"))).rejects.toThrow(/is a file/);
    mkdirSync(path.join(dir, "empty"));
    await expect(readRun(path.join(dir, "empty"))).rejects.toThrow(/holds no pbrl run/);
  });

  it("a run that failed before its first record is 'not started', not an error", async () => {
    const dir = await tempDir();
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ trainer: "madpo" }));
    writeFileSync(path.join(dir, "metrics.jsonl"), "");
    const run = await readRun(dir);
    expect(run.status.state).toBe("not started");
  });
});

describe("runStatus", () => {
  const metrics = (): MetricsData => ({
    records: [],
    byKind: { collect: [], train: [], eval: [], round: [], reward: [] },
    other: [],
    skipped: [],
    partialLastLine: false,
  });
  it("a running iterative run past its last round is in its final evaluation", () => {
    const s = runStatus({
      trainer: "madpo_iter",
      numIterations: 2,
      checkpointRound: 2,
      agentsSaved: false,
      lock: { pid: 5, host: "h", started: null, alive: true },
      metrics: metrics(),
      roundFiles: [1, 2],
    });
    expect(s.summary).toBe("running (pid 5 on h): final evaluation and saving the agents, 2 rounds completed");
  });
  it("a resumed run with more rounds than its saved agents is not finished", () => {
    const s = runStatus({
      trainer: "madpo_iter",
      numIterations: 5,
      checkpointRound: 3,
      agentsSaved: true,
      lock: null,
      metrics: metrics(),
      roundFiles: [1, 2, 3],
    });
    expect(s.state).toBe("stopped");
  });
});
