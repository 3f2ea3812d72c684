/**
 * Resuming an iterative run: the checkpoint is read and checked against this run before anything
 * is written, then the run is put back exactly where the checkpoint left it.
 */
import * as path from "node:path";
import type { AdamW, RngStreams } from "@pbrl/core-tensor";
import type { ReplayBuffer } from "@pbrl/preference-data";
import { loadSavedAgent, type ResolvedAgent } from "./agents.js";
import type { Learner } from "./learner.js";
import { checkResumeChanges, configChanges, type ConfigChange } from "./resume-changes.js";
import { CheckpointError, loadTrainingCheckpoint, type LoadedCheckpoint } from "./training-checkpoint.js";
import type { TrainingCounters } from "./training-counters.js";

/** The checkpoint `resume_from_checkpoint` names (when the run dir's plan resumes), checked against this run, and the config changes it allows. */
export async function checkpointToResume(o: {
  resume: boolean;
  spec: string | boolean | null;
  ckptRoot: string;
  trainerName: string;
  numAgents: number;
  seed: number;
  numRounds: number;
  record: Record<string, unknown>;
}): Promise<{ ckpt: LoadedCheckpoint | undefined; changes: ConfigChange[] }> {
  if (!o.resume) return { ckpt: undefined, changes: [] };
  const ckpt = await loadTrainingCheckpoint(typeof o.spec === "string" ? o.spec : true, o.ckptRoot);
  const s = ckpt.state;
  if (s.trainer !== o.trainerName)
    throw new CheckpointError(`resume_from_checkpoint: ${ckpt.dir} was written by trainer=${s.trainer}; this run is trainer=${o.trainerName}`);
  if (s.numAgents !== o.numAgents || s.seed !== o.seed)
    throw new CheckpointError(
      `resume_from_checkpoint: ${ckpt.dir} was written by a run with ${s.numAgents} agents and seed ${s.seed}; this run has ${o.numAgents} and ${o.seed}`,
    );
  if (s.round > o.numRounds)
    throw new CheckpointError(
      `resume_from_checkpoint: ${ckpt.dir} is after round ${s.round}, beyond num_iterations=${o.numRounds}; raise num_iterations to continue past it`,
    );
  const changes = s.config === undefined ? [] : checkResumeChanges(configChanges(s.config, o.record), ckpt.dir);
  return { ckpt, changes };
}

/** Weights, optimizer moments, every stream (in place), the replay index, the learner's state and the counters, as the checkpoint holds them. */
export async function restoreFromCheckpoint(o: {
  ckpt: LoadedCheckpoint;
  agents: readonly ResolvedAgent[];
  optimizers: readonly AdamW[];
  streams: RngStreams;
  replay: ReplayBuffer;
  learner: Learner;
  counters: TrainingCounters;
}): Promise<void> {
  const { ckpt } = o;
  for (const [i, ag] of o.agents.entries()) {
    const saved = await loadSavedAgent(path.join(ckpt.agentsDir, `agent_${i}`), ag.model, ag.model.device());
    ag.model.copyWeightsFrom(saved);
    saved.dispose();
    o.optimizers[i]!.setState(ckpt.optimizers[i]!);
  }
  o.streams.setState(ckpt.state.rng);
  await o.replay.restore(ckpt.state.replay);
  await o.learner.restoreState(ckpt.dir, o.agents);
  Object.assign(o.counters, ckpt.state.counters);
}
