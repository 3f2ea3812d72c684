/**
 * One agent held by several ranks (parallel_training="ddp" with more ranks than agents), seen by
 * the trainer as one endpoint: the work on a batch is shared out — pairs to score and to train
 * on, rows to score and to step on — a contiguous share per replica, and the results put back in
 * order; loads to train go to every replica; generation (and its loads) and snapshots to the first, which holds the same
 * weights as the others (their gradients are summed before every step, replica-gradients.ts).
 */
import type { PolicyStepResult } from "@pbrl/rl-backends";
import type { AgentEndpoint } from "./rank-channel.js";
import { evenShares } from "./rank-messages.js";
import type { ReplicaGroupSpec } from "./replica-gradients.js";
import type { WorkerRequest } from "./worker-protocol.js";

/** Where the replicas meet (the run's store), known once the run's group has formed. */
export type ReplicaStore = () => Promise<Omit<ReplicaGroupSpec, "subgroup" | "rank" | "size">>;

/** A share's error unless another replica's says more (it names the row that was not finite). */
const FOLLOW_ON = /in another replica's rows/;

export class ReplicatedEndpoint implements AgentEndpoint {
  private where: ReturnType<ReplicaStore> | undefined;

  constructor(
    private readonly replicas: readonly AgentEndpoint[],
    private readonly subgroup: string,
    private readonly store: ReplicaStore,
  ) {
    if (replicas.length < 2) throw new RangeError(`ReplicatedEndpoint: ${replicas.length} replica(s); one needs no replicas`);
  }

  async request<T>(req: WorkerRequest): Promise<T> {
    const k = this.replicas.length;
    // Every request waits on the same promise and goes out when it resolves, so the replicas get
    // them in call order (a generation posted right after a load, unawaited, must follow it).
    this.where ??= this.store();
    const store = await this.where;
    switch (req.kind) {
      case "load": {
        // Weights without optimizer state are for generation, which the first replica does alone.
        if (req.optimizer === undefined) return this.replicas[0]!.request<T>(req);
        // No buffers are handed over: every replica gets a copy of the same weights.
        const devices = await this.all(
          this.replicas.map((r, rank) => r.request<string>({ ...req, replica: { ...store, subgroup: this.subgroup, rank, size: k } })),
        );
        return devices.join(", ") as T;
      }
      case "generate":
      case "snapshot":
        return this.replicas[0]!.request<T>(req);
      case "margins": {
        const parts = await this.all(
          this.scoring(req.pairs.length).map(([a, b, i]) => this.replicas[i]!.request<number[]>({ ...req, pairs: req.pairs.slice(a, b) })),
        );
        return parts.flat() as T;
      }
      case "tokenLogProbs": {
        const parts = await this.all(
          this.scoring(req.rows.length).map(([a, b, i]) => this.replicas[i]!.request<number[][]>({ ...req, rows: req.rows.slice(a, b) })),
        );
        return parts.flat() as T;
      }
      case "step": {
        const total = req.pairs.length;
        await this.all(
          this.shares(total).map(([a, b], i) => this.replicas[i]!.request({ ...req, pairs: req.pairs.slice(a, b), others: req.others.slice(a, b), total })),
        );
        return undefined as T;
      }
      case "policyStep": {
        const { job } = req;
        const total = job.rows.length;
        const parts = await this.all(
          this.shares(total).map(([a, b], i) =>
            this.replicas[i]!.request<PolicyStepResult>({
              ...req,
              total,
              job: { ...job, rows: job.rows.slice(a, b), advantages: job.advantages.slice(a, b), owners: job.owners.slice(a, b) },
            }),
          ),
        );
        // Every replica's loss is the batch's (summed over the replicas before the step).
        return { loss: parts[0]!.loss, logProbs: parts.flatMap((p) => p.logProbs) } as T;
      }
    }
  }

  private shares(n: number): [number, number][] {
    return evenShares(n, this.replicas.length);
  }

  /** The shares of scoring without gradients (no collective): only replicas with something to score, the first at least. */
  private scoring(n: number): [number, number, number][] {
    return this.shares(n)
      .map(([a, b], i): [number, number, number] => [a, b, i])
      .filter(([a, b, i]) => b > a || (n === 0 && i === 0));
  }

  /** Every replica's answer; when any fails, the most telling error (not one that only says another replica failed). */
  private async all<T>(pending: Promise<T>[]): Promise<T[]> {
    const settled = await Promise.allSettled(pending);
    const errors = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as Error] : []));
    if (errors.length > 0) throw errors.find((e) => !FOLLOW_ON.test(String(e?.message))) ?? errors[0];
    return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
  }

  async terminate(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.terminate()));
  }
}
