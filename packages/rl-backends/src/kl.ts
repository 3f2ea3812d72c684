import { scoreCompletions, type CausalLM, type ScoringItem } from "@pbrl/models";
import { mean } from "@pbrl/core-tensor";
import type { ReturnShaping } from "./epochs.js";
import type { Rollout } from "./rollouts.js";
import type { PolicyScorer } from "./policy-step.js";
import { policyRows } from "./update.js";

/**
 * Frozen-reference KL (`reference_kl_enabled`, `reference_kl_coef`) for every MARLHF RL algorithm.
 *
 * Each agent keeps a frozen copy of its initial policy, π_ref. For every sampled completion y of
 * prompt x, a per-sample estimate of KL(π(·|x) ‖ π_ref(·|x)) is computed from the per-token
 * log-probs of exactly the generated tokens (EOS included, padding excluded), and the reward
 * signal of that sample is shaped as R' = R − β·KL (β = `reference_kl_coef`): the penalty goes
 * into `penalties[agent][rollout][g]`, which both the REINFORCE-family update and the
 * actor-critic updates subtract from the joint return. Never a separate loss term.
 *
 * Estimator (default `k1`): the sum over the completion's tokens of log π − log π_ref, i.e. the
 * sequence log-ratio log π(y|x) − log π_ref(y|x). Why k1 and not CoMLRL's k3:
 * - as a *reward* its score-function gradient is exactly ∇ KL(π ‖ π_ref): E_{y∼π}[∇log π(y)·
 *   (log π(y) − log π_ref(y))] = ∇KL (the missing term E[∇log π] is zero). This is the classic
 *   RLHF shaping r − β log(π/π_ref).
 * - k3 = Σ_t (e^{r_t} − 1 − r_t), r_t = log π_ref − log π, is non-negative and a lower-variance
 *   estimate of the KL *value*, but used as a reward its gradient is biased: it is convex in
 *   r_t with its minimum at r_t = 0, so a token the policy already makes *less* likely than the
 *   reference (r_t > 0) is penalised too, and the update pushes it further down — away from the
 *   reference. That is fine for monitoring, wrong as the thing being optimised.
 * k1 of a single sample can be negative (its mean is the KL, ≥ 0). `estimator: "k3"` is
 * available for CoMLRL parity; metrics always report the estimator in use.
 */
export type KlEstimator = "k1" | "k3";
export const KL_ESTIMATORS: readonly KlEstimator[] = ["k1", "k3"];

function checkPair(policy: readonly number[], reference: readonly number[]): void {
  if (policy.length !== reference.length)
    throw new RangeError(`KL: ${policy.length} policy log-probs but ${reference.length} reference log-probs; one per completion token each`);
}

/** Per-token KL terms: k1 = log π − log π_ref; k3 = e^r − 1 − r with r = log π_ref − log π (≥ 0). */
export function tokenKl(policyLogProbs: readonly number[], referenceLogProbs: readonly number[], estimator: KlEstimator = "k1"): number[] {
  checkPair(policyLogProbs, referenceLogProbs);
  return policyLogProbs.map((lp, t) => {
    const r = referenceLogProbs[t]! - lp;
    // expm1(r) − r = e^r − 1 − r without the cancellation of e^r − 1 for small r.
    return estimator === "k1" ? -r : Math.expm1(r) - r;
  });
}

/** The per-sample KL estimate: the sum of `tokenKl` over the completion's tokens (0 for an empty completion). */
export function sequenceKl(policyLogProbs: readonly number[], referenceLogProbs: readonly number[], estimator: KlEstimator = "k1"): number {
  return tokenKl(policyLogProbs, referenceLogProbs, estimator).reduce((a, b) => a + b, 0);
}

/**
 * A frozen copy of a policy: its own variables with the same weights, on `device`
 * (`reference_devices`; "auto" or undefined: where the policy is). It is frozen by use: no
 * optimizer is ever built over it, and the KL functions only score with it (no gradient tape).
 * A LoRA agent whose adapter has not changed its base yet (a fresh one: B = 0) is referenced by
 * its base with the adapter off, no copy; one loaded with a trained adapter by a copy of that
 * adapter over the same base. The caller owns it and disposes it.
 */
export function frozenReference(model: CausalLM, device?: string): CausalLM {
  // Stryker disable next-line ConditionalExpression,LogicalOperator: for device undefined, where = device is undefined too.
  const where = device === undefined || device === "auto" || device === model.device() ? undefined : device;
  if (where === undefined && model.adapter?.isIdentity() === true) return model.baseModel();
  return model.clone(where);
}

/** A policy scored against its reference: its model and the id padding its batches. */
export interface KlPolicy {
  model: CausalLM;
  padTokenId: number;
}

export interface ReferenceKlOptions {
  estimator?: KlEstimator;
  /** Rows per forward pass (default 16). */
  batchSize?: number;
}

/**
 * `kls[agent][rollout][g]`: each agent's KL estimate on each of its sampled completions, from one
 * batched, gradient-free scoring pass of the policy and one of the reference.
 */
export function referenceKls(
  policies: readonly KlPolicy[],
  references: readonly CausalLM[],
  rollouts: readonly Rollout[],
  options: ReferenceKlOptions = {},
): number[][][] {
  const { estimator, batchSize } = checkKlInputs(policies, references, options);
  return policies.map((p, a) => {
    const rows = policyRows(rollouts, a);
    return agentKls(
      rollouts,
      scoreCompletions(p.model, rows, { padTokenId: p.padTokenId, batchSize }).tokenLogProbs,
      references[a]!,
      rows,
      p.padTokenId,
      batchSize,
      estimator,
    );
  });
}

/** {@link referenceKls} with the policies scored by `scorer` (e.g. in the worker threads that hold the weights being trained): the same numbers wherever they are scored. */
export async function referenceKlsFrom(
  scorer: PolicyScorer,
  policies: readonly KlPolicy[],
  references: readonly CausalLM[],
  rollouts: readonly Rollout[],
  options: ReferenceKlOptions = {},
): Promise<number[][][]> {
  const { estimator, batchSize } = checkKlInputs(policies, references, options);
  const rows = policies.map((_, a) => policyRows(rollouts, a));
  // Stryker disable next-line ArrayDeclaration: with no rollouts agentKls returns [] without reading the policy's log-probs.
  const scored = await Promise.all(policies.map((_, a) => (rollouts.length === 0 ? [] : scorer.tokenLogProbs(a, rows[a]!, batchSize))));
  return policies.map((p, a) => agentKls(rollouts, scored[a]!, references[a]!, rows[a]!, p.padTokenId, batchSize, estimator));
}

function checkKlInputs(
  policies: readonly KlPolicy[],
  references: readonly CausalLM[],
  options: ReferenceKlOptions,
): { estimator: KlEstimator; batchSize: number } {
  if (references.length !== policies.length)
    throw new RangeError(
      `reference KL: ${references.length} reference model(s) for ${policies.length} agent(s); reference_devices / the frozen copies must give one per agent`,
    );
  const estimator = options.estimator ?? "k1";
  if (!KL_ESTIMATORS.includes(estimator)) throw new RangeError(`KL estimator must be one of ${KL_ESTIMATORS.join(", ")}, got ${JSON.stringify(estimator)}`);
  return { estimator, batchSize: options.batchSize ?? 16 };
}

/** One agent's `kls[rollout][g]` from its policy's token log-probs on its rows and its reference's. */
function agentKls(
  rollouts: readonly Rollout[],
  policyLogProbs: readonly (readonly number[])[],
  reference: CausalLM,
  rows: readonly ScoringItem[],
  padTokenId: number,
  batchSize: number,
  estimator: KlEstimator,
): number[][] {
  // Stryker disable next-line ConditionalExpression: no rollouts means no rows: the reference scores nothing and rollouts.map gives [] (the early return only skips the call).
  if (rollouts.length === 0) return [];
  const ref = scoreCompletions(reference, rows, { padTokenId, batchSize }).tokenLogProbs;
  const flat = policyLogProbs.map((lp, r) => sequenceKl(lp, ref[r]!, estimator));
  let k = 0;
  return rollouts.map((ro) => ro.returns.map(() => flat[k++]!));
}

export interface ReferenceKlShapingOptions extends ReferenceKlOptions {
  /** The agents being trained (scored as they are when the hook runs: right after sampling). */
  agents: readonly KlPolicy[];
  /** Scores the policies where their current weights are (default: `agents`, in this thread). */
  scorer?: PolicyScorer | undefined;
  /** One frozen reference per agent (`frozenReference` of each initial policy). */
  references: readonly CausalLM[];
  /** β = reference_kl_coef (≥ 0). */
  coef: number;
}

/**
 * Penalties `coef · KL` for a batch of rollouts, plus metrics:
 * `turn_1/reference_kl_mean` (mean KL estimate over agents and samples),
 * `turn_1/reference_kl_penalty_mean` (= coef × that mean) and `agent_i/reference_kl_mean`.
 */
export function referenceKlPenalties(rollouts: readonly Rollout[], o: ReferenceKlShapingOptions): ReturnShaping {
  checkCoef(o.coef);
  return penaltiesFrom(referenceKls(o.agents, o.references, rollouts, o), o.coef);
}

function checkCoef(coef: number): void {
  if (!(coef >= 0) || !Number.isFinite(coef)) throw new RangeError(`reference_kl_coef must be a finite number ≥ 0, got ${coef}`);
}

/** Penalties coef · KL and the KL metrics from `kls[agent][rollout][g]`. */
function penaltiesFrom(kls: readonly (readonly (readonly number[])[])[], coef: number): ReturnShaping {
  const metrics: Record<string, number> = {};
  kls.forEach((perRollout, a) => {
    const flat = perRollout.flat();
    const bad = flat.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0)
      throw new RangeError(
        `reference KL of agent ${a} is ${flat[bad]} on sample ${bad} of the batch; the policy or its reference produced a non-finite log-prob`,
      );
    metrics[`agent_${a}/reference_kl_mean`] = mean(flat);
  });
  const all = kls.flat(2);
  metrics["turn_1/reference_kl_mean"] = mean(all);
  metrics["turn_1/reference_kl_penalty_mean"] = coef * mean(all);
  return { penalties: kls.map((perRollout) => perRollout.map((g) => g.map((kl) => coef * kl))), metrics };
}

/**
 * The `shaping` hook of `runRlEpochs` / `runActorCriticEpochs` for the frozen-reference KL. With
 * coef = 0 every penalty is exactly 0, and R − 0 = R bit for bit, so training is identical to
 * running without the hook (only the metrics are added).
 */
export function referenceKlShaping(o: ReferenceKlShapingOptions): (rollouts: readonly Rollout[]) => ReturnShaping | Promise<ReturnShaping> {
  checkCoef(o.coef);
  if (o.references.length !== o.agents.length) throw new RangeError(`reference KL: ${o.references.length} reference model(s) for ${o.agents.length} agent(s)`);
  const scorer = o.scorer;
  if (scorer === undefined) return (rollouts) => referenceKlPenalties(rollouts, o);
  return async (rollouts) => penaltiesFrom(await referenceKlsFrom(scorer, o.agents, o.references, rollouts, o), o.coef);
}
