/**
 * How far a run got, from what is on disk: the newest checkpoint (iterative trainers write one
 * after every round), saved agents (written last), run.lock (held while a run is going) and the
 * metrics. Pure: readRun gathers the facts.
 */
import type { LockInfo, MetricsData, RunStatus, TrainerName } from "../run-data.js";
import { num } from "./metrics-file.js";

export interface StatusFacts {
  trainer: TrainerName | null;
  numIterations: number | null;
  /** checkpoints/latest.json's round. */
  checkpointRound: number | null;
  agentsSaved: boolean;
  lock: LockInfo | null;
  metrics: MetricsData;
  /** Rounds that have a round file. */
  roundFiles: readonly number[];
}

function maxOf(values: readonly number[]): number | null {
  const finite = values.filter(Number.isFinite);
  return finite.length === 0 ? null : Math.max(...finite);
}

/** The highest round anything on disk mentions. */
function lastRoundSeen(f: StatusFacts): number | null {
  const m = f.metrics;
  return maxOf([...m.byKind.round.map((r) => num(r, "iter/current_iteration")), ...m.records.map((r) => num(r, "round")), ...f.roundFiles]);
}

function lockText(lock: LockInfo): string {
  return lock.pid === null ? "" : ` (pid ${lock.pid}${lock.host === null ? "" : ` on ${lock.host}`})`;
}

const NOTHING_YET = "nothing logged: the run stopped or failed before its first metrics record";

export function runStatus(f: StatusFacts): RunStatus {
  const iterative =
    f.trainer === null ? f.checkpointRound !== null || f.roundFiles.length > 0 || f.metrics.byKind.round.length > 0 : f.trainer.endsWith("_iter");
  const alive = f.lock?.alive;
  const somethingWritten = f.metrics.records.length > 0 || f.roundFiles.length > 0 || f.checkpointRound !== null || f.agentsSaved;
  const base = { completedRounds: null, numIterations: f.numIterations, unfinishedRound: null };
  // A lock whose process is gone was left by a run that was killed (a clean stop releases it).
  const killed = f.lock?.alive === false ? " (killed: it left run.lock behind)" : "";

  if (!iterative) {
    const updates = maxOf(f.metrics.byKind.train.map((r) => num(r, "update")));
    const collect = f.metrics.byKind.collect[0];
    const pairs = collect === undefined ? null : num(collect, "preference/num_pairs");
    const progress = `${pairs === null || Number.isNaN(pairs) ? "no pairs collected yet" : `${pairs} pairs`}, ${updates ?? 0} updates`;
    if (alive === true && !f.agentsSaved) return { ...base, state: "running", summary: `running${lockText(f.lock!)}: ${progress} so far` };
    if (f.agentsSaved) return { ...base, state: "finished", summary: `finished: ${progress}, agents saved` };
    if (pairs === 0)
      return {
        ...base,
        state: "finished",
        summary: "finished without training: no item produced a non-tied preference pair, so the policies were not updated",
      };
    if (alive === null)
      return {
        ...base,
        state: "running",
        summary: `locked by a run${lockText(f.lock!)} that cannot be checked from this host: running, or stopped (${progress})`,
      };
    if (!somethingWritten) return { ...base, state: "not started", summary: NOTHING_YET };
    return { ...base, state: "stopped", summary: `stopped before finishing${killed}: ${progress}` };
  }

  const completed = f.checkpointRound ?? 0;
  const seen = lastRoundSeen(f);
  const unfinished = seen !== null && seen > completed ? seen : null;
  const of = f.numIterations === null ? "" : ` of ${f.numIterations}`;
  const status = { completedRounds: completed, numIterations: f.numIterations, unfinishedRound: unfinished };
  const allDone = f.numIterations === null || completed >= f.numIterations;
  if (alive === true) {
    const doing = allDone && unfinished === null ? "final evaluation and saving the agents" : `round ${unfinished ?? completed + 1}${of} in progress`;
    return { ...status, state: "running", summary: `running${lockText(f.lock!)}: ${doing}, ${completed} round${completed === 1 ? "" : "s"} completed` };
  }
  if (f.agentsSaved && allDone) return { ...status, state: "finished", summary: `finished: ${completed}${of} rounds, agents saved` };
  if (alive === null)
    return {
      ...status,
      state: "running",
      summary: `locked by a run${lockText(f.lock!)} that cannot be checked from this host: running, or stopped after round ${completed}${of}`,
    };
  if (!somethingWritten) return { ...status, state: "not started", summary: NOTHING_YET };
  if (completed === 0)
    return { ...status, state: "stopped", summary: `stopped in round ${unfinished ?? 1}${of}${killed} before any round completed; a new run starts over` };
  if (allDone && unfinished === null)
    return {
      ...status,
      state: "stopped",
      summary: `stopped after its last round (${completed}${of})${killed} before the final evaluation and saving the agents; resume_from_checkpoint=true finishes it`,
    };
  const left = unfinished === null ? "" : `; round ${unfinished} was left unfinished`;
  return { ...status, state: "stopped", summary: `stopped after round ${completed}${of}${killed}${left}; continue it with resume_from_checkpoint=true` };
}
