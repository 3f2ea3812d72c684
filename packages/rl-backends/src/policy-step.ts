/**
 * One agent's REINFORCE-family optimizer step, and where the agents taking such steps live: in
 * this thread, or (parallel_training="mp") one worker thread each, which run exactly this code.
 */
import { addGrads, globalGradNorm, NonFiniteError, tf } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, scoreCompletions, type CausalLM, type ScoringItem } from "@pbrl/models";
import type { TrainableAgent } from "@pbrl/preference-data";
import { policyGradientLoss } from "./policy-loss.js";

/** One agent's share of an update: its (prompt, completion) rows and their advantages. Plain data, so it can cross to a worker thread. */
export interface PolicyStepJob {
  rows: ScoringItem[];
  /** One per row. */
  advantages: number[];
  /** Per row, the item and generation it came from (names a non-finite log-prob). */
  owners: { item: number; g: number }[];
  /** Names the batch in errors, e.g. "epoch 2, batch 7". */
  where: string;
  /** Rows per forward pass (default all); gradients accumulate, still one optimizer step. */
  maxRowsPerForward?: number | undefined;
}

/** What a step reports, computed in the forward pass that produced the gradients (pre-step). */
export interface PolicyStepResult {
  loss: number;
  /** Sequence log-prob of every row. */
  logProbs: number[];
}

/**
 * Differentiable log π(completion | prompt) per row: the sum over every completion token, EOS
 * included, padding excluded. All rows go through one right-padded forward pass; padding is
 * placed by length, never found by comparing with the pad id, so an EOS equal to the pad id is
 * still scored.
 */
export function sequenceLogProbs(model: CausalLM, rows: readonly ScoringItem[], padTokenId: number): tf.Tensor1D {
  return tf.tidy(() => {
    const { tokens, sums } = completionLogProbs(model, buildScoringBatch(rows, padTokenId));
    tokens.dispose();
    return sums;
  });
}

/** An agent's summed gradients of a job's rows (or of its share of them), by weight name, with the loss and each row's log-prob. */
export interface PolicyGradients extends PolicyStepResult {
  grads: Map<string, tf.Tensor>;
}

/** Throws a RangeError when a job cannot make a step: advantages that do not match the rows, no generated token at all. */
export function checkPolicyJob(index: number, job: PolicyStepJob): void {
  const chunk = job.maxRowsPerForward;
  if (chunk !== undefined && (!Number.isInteger(chunk) || chunk < 1)) throw new RangeError(`maxRowsPerForward must be an integer ≥ 1, got ${chunk}`);
  if (job.advantages.length !== job.rows.length)
    throw new RangeError(`agent ${index}: ${job.advantages.length} advantage(s) for ${job.rows.length} row(s) in ${job.where}`);
  if (job.rows.every((row) => row.completionIds.length === 0))
    throw new RangeError(`agent ${index} generated no tokens in ${job.where}; there is nothing to train on`);
}

/**
 * The gradients of L = mean over `total` rows of −log π(completion | prompt) · A over the job's
 * rows: all of them by default; a data-parallel replica gives the whole job's row count for its
 * share, so that the replicas' gradients sum to the job's. Does not check them (see
 * {@link applyPolicyGradients}).
 */
export function policyGradients(agent: TrainableAgent, job: PolicyStepJob, total = job.rows.length): PolicyGradients {
  const { rows } = job;
  const size = job.maxRowsPerForward ?? Math.max(1, rows.length);
  const grads = new Map<string, tf.Tensor>();
  const logProbs: number[] = [];
  let loss = 0;
  try {
    for (let start = 0; start < rows.length; start += size) {
      const part = rows.slice(start, start + size);
      if (part.every((row) => row.completionIds.length === 0)) {
        // No token: log π = 0 and no gradient; the rows still count in the mean.
        logProbs.push(...part.map(() => 0));
        continue;
      }
      const a = job.advantages.slice(start, start + size);
      const { value, grads: raw } = agent.model.training(() =>
        tf.variableGrads(() => {
          const sums = sequenceLogProbs(agent.model, part, agent.padTokenId);
          logProbs.push(...sums.dataSync());
          // This part's share of the mean over the whole batch.
          return policyGradientLoss(sums, a, total);
        }, agent.model.trainableVariables()),
      );
      loss += value.dataSync()[0]!;
      value.dispose();
      addGrads(grads, agent.model.gradsByWeightName(raw));
    }
  } catch (e) {
    tf.dispose([...grads.values()]);
    throw e;
  }
  return { grads, loss, logProbs };
}

/** The first row of `logProbs` that is not finite, as an error naming its item and generation; undefined when all are. */
export function nonFiniteRow(index: number, job: Pick<PolicyStepJob, "owners" | "where">, logProbs: readonly number[]): NonFiniteError | undefined {
  const badRow = logProbs.findIndex((x) => !Number.isFinite(x));
  if (badRow < 0) return undefined;
  const o = job.owners[badRow] ?? { item: -1, g: -1 };
  return new NonFiniteError(`agent ${index} has a non-finite log-prob (${logProbs[badRow]}) for generation ${o.g} of item ${o.item} in ${job.where}`);
}

/**
 * Agent `index`'s optimizer step from its gradients of a job. A non-finite log-prob, loss or
 * gradient stops with a `NonFiniteError` naming the agent and `where`, before the step. Disposes
 * the gradients either way.
 */
export function applyPolicyGradients(agent: TrainableAgent, index: number, job: Pick<PolicyStepJob, "owners" | "where">, g: PolicyGradients): PolicyStepResult {
  try {
    const bad = nonFiniteRow(index, job, g.logProbs);
    if (bad !== undefined) throw bad;
    if (!Number.isFinite(g.loss)) throw new NonFiniteError(`agent ${index} has a non-finite loss (${g.loss}) in ${job.where}`);
    const norm = globalGradNorm(g.grads.values());
    if (!Number.isFinite(norm)) throw new NonFiniteError(`agent ${index} has non-finite gradients (norm ${norm}) in ${job.where}`);
    agent.optimizer.step(g.grads);
  } finally {
    tf.dispose([...g.grads.values()]);
  }
  return { loss: g.loss, logProbs: g.logProbs };
}

/**
 * Agent `index`'s optimizer step on L = mean over its rows of −log π(completion | prompt) · A
 * (sum of log-probs over every generated token, EOS included; as CoMLRL, no per-token
 * normalisation). A non-finite log-prob, loss or gradient stops with a `NonFiniteError` naming
 * the agent and `where`, before the step; nothing is skipped or replaced.
 */
export function policyGradientStep(agent: TrainableAgent, index: number, job: PolicyStepJob): PolicyStepResult {
  checkPolicyJob(index, job);
  return applyPolicyGradients(agent, index, job, policyGradients(agent, job));
}

/** Scores agent `index`'s rows under its current policy without gradients: each row's per-token log-probs. */
export interface PolicyScorer {
  tokenLogProbs(index: number, rows: ScoringItem[], batchSize: number): Promise<number[][]>;
}

/**
 * Where the agents of the REINFORCE family's updates live and take their steps: in this thread
 * ({@link localPolicyGradientAgents}) or one per worker thread. Each agent's steps depend only
 * on its own rows and advantages, so the agents can step side by side.
 */
export interface PolicyGradientAgents extends PolicyScorer {
  readonly count: number;
  policyStep(index: number, job: PolicyStepJob): Promise<PolicyStepResult>;
}

/** Agents held by this thread: each request runs at once, agent after agent. */
export function localPolicyGradientAgents(agents: readonly TrainableAgent[]): PolicyGradientAgents {
  return {
    count: agents.length,
    policyStep: async (i, job) => policyGradientStep(agents[i]!, i, job),
    tokenLogProbs: async (i, rows, batchSize) => scoreCompletions(agents[i]!.model, rows, { padTokenId: agents[i]!.padTokenId, batchSize }).tokenLogProbs,
  };
}
