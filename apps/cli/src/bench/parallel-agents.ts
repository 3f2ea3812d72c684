/**
 * The parallel_training measurement of `pbrl bench`: two agents of the preset model do the same
 * work twice from the same weights and streams, first in this thread (parallel_training="none"),
 * then one worker thread per agent ("mp"): sampling candidates for a batch of prompts, MADPO
 * updates, and the policy-gradient updates of MARLHF's RL stage (the REINFORCE family). The
 * ratios are the speed-ups "mp" brings to collection and to training.
 */
import { AdamW, RngStream, tf, type BackendName } from "@pbrl/core-tensor";
import { localAgents, madpoUpdate, type MadpoAgents, type TrainableAgent } from "@pbrl/dpo";
import { CausalLM, parseModelConfig } from "@pbrl/models";
import { ParallelPolicySampler, PolicySampler, type AgentPairTokens, type AgentSamples, type GenerationSettings, type Policy } from "@pbrl/preference-data";
import { AgentWorkers, localTeam, type AgentTeam, type PolicyStepJob } from "@pbrl/trainers";
import { presetConfigJson, type Preset } from "./presets.js";

/** Sizes of the measurement, snake_case because they are printed as JSON next to its results. */
export interface ParallelWorkload {
  agents: number;
  /** Generation: prompts × candidates rows per agent, sampled at temperature 1 without EOS. */
  gen_prompts: number;
  gen_candidates: number;
  gen_prompt_len: number;
  gen_new_tokens: number;
  pairs_per_update: number;
  prompt_len: number;
  completion_len: number;
  /** Timed updates, after one untimed. */
  updates: number;
}

/** One kind of work, timed in this thread and in the worker threads. */
export interface ParallelTiming {
  sequential_s: number;
  mp_s: number;
  /** sequential_s ÷ mp_s: > 1 means the worker threads are faster. */
  speedup: number;
}

export interface ParallelResult {
  workload: ParallelWorkload;
  threads_per_worker: number;
  /** Sampling every agent's candidates for the batch of prompts (one sampler call, untimed warm-up first). */
  generation: ParallelTiming & {
    /** Whether both ways sampled the same tokens: always on wasm and cpu; on native a different thread count may flip a near-tie. */
    same_tokens: boolean;
  };
  /** Mean of one MADPO update (both agents' margins and steps). */
  update: ParallelTiming & {
    /** Largest difference between a weight trained here and in a worker: 0 on wasm and cpu; on native, summation order amplified by AdamW. */
    max_abs_weight_diff: number;
  };
  /**
   * Mean of one policy-gradient update of MARLHF's RL stage (every agent's step on its rows: the
   * workload's pairs_per_update items × `generations` samples, of prompt_len + completion_len tokens).
   */
  rl_update: ParallelTiming & {
    generations: number;
    /** As for `update`: 0 on wasm and cpu. */
    max_abs_weight_diff: number;
  };
}

export function parallelWorkload(steps: number): ParallelWorkload {
  return {
    agents: 2,
    gen_prompts: 8,
    gen_candidates: 8,
    gen_prompt_len: 16,
    gen_new_tokens: 32,
    pairs_per_update: 8,
    prompt_len: 16,
    completion_len: 48,
    updates: steps,
  };
}

const timing = (sequential: number, mp: number): ParallelTiming => ({ sequential_s: sequential, mp_s: mp, speedup: sequential / mp });

async function seconds<T>(fn: () => Promise<T>): Promise<{ s: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { s: (performance.now() - t0) / 1000, value };
}

/** Mean seconds of one policy-gradient update (every agent's step), after one untimed. */
async function timePolicySteps(agents: AgentTeam, jobs: readonly PolicyStepJob[][]): Promise<number> {
  const update = (b: number) => Promise.all(jobs[b]!.map((job, i) => agents.policyStep(i, job)));
  await update(0);
  const { s } = await seconds(async () => {
    for (let b = 1; b < jobs.length; b++) await update(b);
  });
  return s / (jobs.length - 1);
}

/** Largest absolute difference between the weights of two sets of agents. */
function maxWeightDiff(a: readonly TrainableAgent[], b: readonly TrainableAgent[]): number {
  let diff = 0;
  a.forEach((x, i) => {
    const other = b[i]!.model.params;
    for (const [name, v] of x.model.params)
      diff = Math.max(
        diff,
        tf.tidy(() => tf.max(tf.abs(tf.sub(v, other.get(name)!))).dataSync()[0]!),
      );
  });
  return diff;
}

async function timeUpdates(agents: MadpoAgents, batches: readonly AgentPairTokens[][][]): Promise<number> {
  const options = (b: number) => ({ beta: 0.1, scoreLastToken: false, where: `bench batch ${b}` });
  await madpoUpdate(agents, batches[0]!, options(0));
  const { s } = await seconds(async () => {
    for (let b = 1; b < batches.length; b++) await madpoUpdate(agents, batches[b]!, options(b));
  });
  return s / (batches.length - 1);
}

/** Random token ids as text: a tokenizer of one character per id, so prompts round-trip exactly. */
const idTokenizer = {
  // no special tokens: the ids are the text
  specialTokens: {},
  encode: (text: string) => Array.from(text, (c) => c.codePointAt(0)! - 0x100),
  decode: (ids: readonly number[]) => String.fromCodePoint(...ids.map((i) => i + 0x100)),
};

export async function measureParallel(preset: Preset, backend: BackendName, steps: number): Promise<ParallelResult> {
  const w = parallelWorkload(steps);
  const config = parseModelConfig(presetConfigJson(preset), `bench preset ${preset}`);
  const data = RngStream.fromSeed(0, "bench-parallel");
  const ids = (n: number) => Array.from({ length: n }, () => 1 + data.int(config.vocabSize - 1));
  const batches = Array.from({ length: w.updates + 1 }, () =>
    Array.from({ length: w.pairs_per_update }, () =>
      Array.from({ length: w.agents }, () => ({ promptIds: ids(w.prompt_len), winnerIds: ids(w.completion_len), loserIds: ids(w.completion_len) })),
    ),
  );
  const prompts = Array.from({ length: w.gen_prompts }, () => Array.from({ length: w.agents }, () => idTokenizer.decode(ids(w.gen_prompt_len))));
  const settings: GenerationSettings = { maxNewTokens: w.gen_new_tokens, temperature: 1, topP: 1, topK: null, maxBatchRows: w.gen_prompts * w.gen_candidates };
  const fresh = (): TrainableAgent[] =>
    Array.from({ length: w.agents }, (_, i) => {
      const model = CausalLM.randomInit(config, RngStream.fromSeed(i, "bench-parallel-agent"));
      return { model, optimizer: new AdamW(model.params, { lr: 1e-4 }), padTokenId: 0 };
    });
  // No EOS id in range: every row generates gen_new_tokens tokens.
  const asPolicies = (agents: readonly TrainableAgent[]): Policy[] =>
    agents.map((a) => ({ model: a.model, tokenizer: idTokenizer as unknown as Policy["tokenizer"], eosTokenIds: [-1], padTokenId: 0 }));
  const RL_GENERATIONS = 2;
  const jobs: PolicyStepJob[][] = Array.from({ length: w.updates + 1 }, (_, b) =>
    Array.from({ length: w.agents }, () => {
      const rows = Array.from({ length: w.pairs_per_update * RL_GENERATIONS }, () => ({ promptIds: ids(w.prompt_len), completionIds: ids(w.completion_len) }));
      return {
        rows,
        advantages: rows.map(() => data.random() * 2 - 1),
        owners: rows.map((_, r) => ({ item: Math.floor(r / RL_GENERATIONS), g: r % RL_GENERATIONS })),
        where: `bench update ${b}`,
      };
    }),
  );
  const sequential = fresh();
  const parallel = fresh();
  const rlSequential = fresh();
  const rlParallel = fresh();
  const workers = new AgentWorkers(w.agents, backend);
  try {
    const here = new PolicySampler(asPolicies(sequential), settings, RngStream.fromSeed(0, "bench-sampling"));
    here.sample(prompts.slice(0, 1), 1);
    const genHere = await seconds(async () => here.sample(prompts, w.gen_candidates));
    await workers.loadWeights(parallel);
    const there = new ParallelPolicySampler(asPolicies(parallel), settings, RngStream.fromSeed(0, "bench-sampling"), (a, promptIds, n, s, rng) =>
      workers.generate(a, promptIds, n, s, [-1], rng),
    );
    await there.sample(prompts.slice(0, 1), 1);
    const genThere = await seconds(() => there.sample(prompts, w.gen_candidates));
    const tokensOf = (samples: AgentSamples[][]) => JSON.stringify(samples.map((item) => item.map((a) => a.tokens)));

    const sequentialS = await timeUpdates(localAgents(sequential), batches);
    await workers.load(parallel);
    const mpS = await timeUpdates(workers, batches);
    await workers.pull(parallel, false);

    const rlSequentialS = await timePolicySteps(localTeam(rlSequential), jobs);
    await workers.load(rlParallel);
    const rlMpS = await timePolicySteps(workers, jobs);
    await workers.pull(rlParallel, false);
    return {
      workload: w,
      threads_per_worker: workers.threadsPerWorker,
      generation: { ...timing(genHere.s, genThere.s), same_tokens: tokensOf(genHere.value) === tokensOf(genThere.value) },
      update: { ...timing(sequentialS, mpS), max_abs_weight_diff: maxWeightDiff(sequential, parallel) },
      rl_update: { ...timing(rlSequentialS, rlMpS), generations: RL_GENERATIONS, max_abs_weight_diff: maxWeightDiff(rlSequential, rlParallel) },
    };
  } finally {
    await workers.close();
    for (const a of [...sequential, ...parallel, ...rlSequential, ...rlParallel]) {
      a.optimizer.dispose();
      a.model.dispose();
    }
  }
}
