import { addGrads, globalGradNorm, NonFiniteError, tf } from "@pbrl/core-tensor";
import { type AgentPairTokens, type TrainableAgent } from "@pbrl/preference-data";
import { agentLoss, marginMetrics, othersSum, type MarginMetrics } from "./loss.js";
import { agentMargins } from "./scoring.js";

export interface MadpoUpdateOptions {
  beta: number;
  scoreLastToken: boolean;
  /**
   * Pairs per forward and backward pass (gradient_accumulation_steps: train_batch_size): the
   * batch's gradients are summed over micro-batches, each weighted by its share of the batch, then
   * one optimizer step, the update of the whole batch at once. Default: the whole batch.
   */
  microBatch?: number;
  /** Names the batch (and round) in errors, e.g. "round 3, batch 7". */
  where: string;
}

/** Agent `index`'s side of every pair of a batch (`batch[pair][agent]`). */
export function agentPairs(batch: readonly (readonly AgentPairTokens[])[], index: number): AgentPairTokens[] {
  return batch.map((pair) => {
    const t = pair[index];
    if (t === undefined) throw new RangeError(`a pair has no tokens for agent ${index}`);
    return t;
  });
}

/** Agent `index`'s margins on its pairs without gradients: what the other agents' losses hold fixed. */
export function detachedMargins(agent: TrainableAgent, pairs: readonly AgentPairTokens[], scoreLastToken: boolean): number[] {
  return tf.tidy(() => Array.from(agentMargins(agent.model, pairs, { scoreLastToken, padTokenId: agent.padTokenId }).dataSync()));
}

/** Throws {@link NonFiniteError} naming the agent and pair when a detached margin is NaN or ±∞. */
export function checkMargins(margins: readonly number[], index: number, where: string): void {
  const bad = margins.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw new NonFiniteError(`MADPO: agent ${index} has a non-finite log-prob margin (${margins[bad]}) for pair ${bad} in ${where}`);
}

/** An agent's summed gradients of a batch (or of its share of one), by weight name, and its loss. */
export interface AgentGradients {
  grads: Map<string, tf.Tensor>;
  loss: number;
}

/**
 * Agent `index`'s gradients of the MADPO loss — its own differentiable margins plus `others` (the
 * other agents' detached margins summed per pair) — over `pairs`, each micro-batch weighted by its
 * share of a batch of `total` pairs: the whole batch by default; a data-parallel replica gives the
 * whole batch's size for its share, so that the replicas' gradients sum to the batch's. Does not
 * check them (see {@link applyAgentGradients}).
 */
export function agentGradients(
  agent: TrainableAgent,
  pairs: readonly AgentPairTokens[],
  others: Float32Array,
  options: MadpoUpdateOptions,
  total = pairs.length,
): AgentGradients {
  const opts = { scoreLastToken: options.scoreLastToken, padTokenId: agent.padTokenId };
  const size = options.microBatch ?? Math.max(1, pairs.length);
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`microBatch must be an integer ≥ 1, got ${size}`);
  const grads = new Map<string, tf.Tensor>();
  let loss = 0;
  for (let start = 0; start < pairs.length; start += size) {
    const part = pairs.slice(start, start + size);
    const share = part.length / total; // the batch's mean loss, summed over its parts
    const { value, grads: raw } = agent.model.training(() =>
      tf.variableGrads(
        () =>
          tf.tidy(
            () => tf.mul(agentLoss(agentMargins(agent.model, part, opts), others.subarray(start, start + part.length), options.beta), share) as tf.Scalar,
          ),
        agent.model.trainableVariables(),
      ),
    );
    loss += value.dataSync()[0]!;
    value.dispose();
    addGrads(grads, agent.model.gradsByWeightName(raw));
  }
  return { grads, loss };
}

/**
 * One optimizer step of agent `index` from its gradients of a batch. Throws {@link NonFiniteError},
 * before stepping, on a non-finite loss or gradient. Disposes the gradients either way.
 */
export function applyAgentGradients(agent: TrainableAgent, { grads, loss }: AgentGradients, index: number, options: Pick<MadpoUpdateOptions, "where">): void {
  try {
    const norm = Number.isFinite(loss) ? globalGradNorm(grads.values()) : NaN;
    if (!Number.isFinite(loss) || !Number.isFinite(norm)) {
      const what = Number.isFinite(loss) ? `non-finite gradients (norm ${norm})` : `a non-finite loss (${loss})`;
      throw new NonFiniteError(`MADPO: agent ${index} has ${what} in ${options.where}`);
    }
    agent.optimizer.step(grads);
  } finally {
    tf.dispose([...grads.values()]);
  }
}

/**
 * One optimizer step of agent `index`: its own differentiable margins plus `others` (the other
 * agents' detached margins summed per pair) in the MADPO loss. Throws {@link NonFiniteError},
 * before stepping, on a non-finite loss or gradient.
 */
export function agentStep(agent: TrainableAgent, pairs: readonly AgentPairTokens[], others: Float32Array, index: number, options: MadpoUpdateOptions): void {
  applyAgentGradients(agent, agentGradients(agent, pairs, others, options), index, options);
}

/**
 * Where the agents of an update live and run their two phases: in this thread
 * ({@link localAgents}) or one per worker thread (parallel_training="mp").
 */
export interface MadpoAgents {
  readonly count: number;
  /** Agent `index`'s detached margins on its pairs. */
  margins(index: number, pairs: AgentPairTokens[], scoreLastToken: boolean): Promise<number[]>;
  /** Agent `index`'s optimizer step given the others' detached margins summed per pair. */
  step(index: number, pairs: AgentPairTokens[], others: Float32Array, options: MadpoUpdateOptions): Promise<void>;
}

/** Agents held by this thread: each phase runs at once, agent after agent. */
export function localAgents(agents: readonly TrainableAgent[]): MadpoAgents {
  return {
    count: agents.length,
    margins: async (i, pairs, scoreLastToken) => detachedMargins(agents[i]!, pairs, scoreLastToken),
    step: async (i, pairs, others, options) => agentStep(agents[i]!, pairs, others, i, options),
  };
}

/**
 * One MADPO update from a batch of pairs (`batch[pair][agent]`): every agent's margins once
 * without gradients; then every agent's own differentiable margins plus the others' detached
 * ones, and one optimizer step (agent after agent in this thread, concurrently across worker
 * threads: each agent's step depends only on the detached margins). Returns the batch metrics
 * computed from the detached margins, i.e. before the update.
 */
export async function madpoUpdate(agents: MadpoAgents, batch: readonly (readonly AgentPairTokens[])[], options: MadpoUpdateOptions): Promise<MarginMetrics> {
  if (batch.length === 0) throw new RangeError("madpoUpdate: empty batch");
  const indices = Array.from({ length: agents.count }, (_, i) => i);
  const perAgent = indices.map((i) => agentPairs(batch, i));
  const detached = await Promise.all(indices.map((i) => agents.margins(i, perAgent[i]!, options.scoreLastToken)));
  detached.forEach((m, i) => checkMargins(m, i, options.where));
  const metrics = marginMetrics(detached, options.beta);
  // Every step runs even when one fails, so no worker is left mid-step; the first error wins.
  const steps = await Promise.allSettled(indices.map((i) => agents.step(i, perAgent[i]!, othersSum(detached, i), options)));
  const failed = steps.find((r) => r.status === "rejected");
  if (failed !== undefined) throw failed.reason;
  return metrics;
}
