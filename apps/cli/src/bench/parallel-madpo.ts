/**
 * The parallel_training measurement of `pbrl bench`: the same MADPO updates of two agents of the
 * preset model, first in this thread (parallel_training="none"), then one worker thread per
 * agent ("mp"), from the same starting weights. The ratio is the speed-up "mp" brings to
 * MADPO's training phase (collection and evaluation run in the main thread either way).
 */
import { AdamW, RngStream, tf, type BackendName } from "@pbrl/core-tensor";
import { localAgents, madpoUpdate, type MadpoAgents, type TrainableAgent } from "@pbrl/dpo";
import { CausalLM, parseModelConfig } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { AgentWorkers } from "@pbrl/trainers";
import { presetConfigJson, type Preset } from "./workloads.js";

/** Sizes of the measurement, snake_case because they are printed as JSON next to its results. */
export interface ParallelWorkload {
  agents: number;
  pairs_per_update: number;
  prompt_len: number;
  completion_len: number;
  /** Timed updates, after one untimed. */
  updates: number;
}

export interface ParallelResult {
  workload: ParallelWorkload;
  threads_per_worker: number;
  /** Mean wall seconds of one update (both agents' margins and steps). */
  sequential_update_s: number;
  mp_update_s: number;
  /** sequential_update_s ÷ mp_update_s: > 1 means the worker threads train faster. */
  mp_speedup: number;
  /**
   * Largest difference between a weight trained in this thread and in a worker. 0 on wasm and
   * cpu; on native the thread count changes the order of partial sums, so a few ulps.
   */
  max_abs_weight_diff: number;
}

export function parallelWorkload(steps: number): ParallelWorkload {
  return { agents: 2, pairs_per_update: 8, prompt_len: 16, completion_len: 48, updates: steps };
}

function batchOf(w: ParallelWorkload, vocab: number, rng: RngStream): AgentPairTokens[][] {
  const ids = (n: number) => Array.from({ length: n }, () => 1 + rng.int(vocab - 1));
  return Array.from({ length: w.pairs_per_update }, () => Array.from({ length: w.agents }, () => ({ promptIds: ids(w.prompt_len), winnerIds: ids(w.completion_len), loserIds: ids(w.completion_len) })));
}

async function timeUpdates(agents: MadpoAgents, batches: readonly AgentPairTokens[][][]): Promise<number> {
  const options = (b: number) => ({ beta: 0.1, scoreLastToken: false, where: `bench batch ${b}` });
  await madpoUpdate(agents, batches[0]!, options(0));
  const t0 = performance.now();
  for (let b = 1; b < batches.length; b++) await madpoUpdate(agents, batches[b]!, options(b));
  return (performance.now() - t0) / 1000 / (batches.length - 1);
}

export async function measureParallel(preset: Preset, backend: BackendName, steps: number): Promise<ParallelResult> {
  const w = parallelWorkload(steps);
  const config = parseModelConfig(presetConfigJson(preset), `bench preset ${preset}`);
  const data = RngStream.fromSeed(0, "bench-parallel");
  const batches = Array.from({ length: w.updates + 1 }, () => batchOf(w, config.vocabSize, data));
  const fresh = (): TrainableAgent[] =>
    Array.from({ length: w.agents }, (_, i) => {
      const model = CausalLM.randomInit(config, RngStream.fromSeed(i, "bench-parallel-agent"));
      return { model, optimizer: new AdamW(model.params, { lr: 1e-4 }), padTokenId: 0 };
    });
  const sequential = fresh();
  const parallel = fresh();
  const workers = new AgentWorkers(w.agents, backend);
  try {
    const sequentialS = await timeUpdates(localAgents(sequential), batches);
    await workers.load(parallel);
    const mpS = await timeUpdates(workers, batches);
    await workers.pull(parallel, false);
    let diff = 0;
    sequential.forEach((a, i) => {
      const other = parallel[i]!.model.params;
      for (const [name, v] of a.model.params) diff = Math.max(diff, tf.tidy(() => tf.max(tf.abs(tf.sub(v, other.get(name)!))).dataSync()[0]!));
    });
    return { workload: w, threads_per_worker: workers.threadsPerWorker, sequential_update_s: sequentialS, mp_update_s: mpS, mp_speedup: sequentialS / mpS, max_abs_weight_diff: diff };
  } finally {
    await workers.close();
    for (const a of [...sequential, ...parallel]) {
      a.optimizer.dispose();
      a.model.dispose();
    }
  }
}
