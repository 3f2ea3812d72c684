/**
 * parallel_training="mp": one worker thread per agent. Each worker holds a copy of its agent,
 * generates its candidates and runs its two phases of every MADPO update (in MARLHF's RL stage:
 * its policy steps and the scoring the reference KL needs), so the agents' generation and their
 * forward and backward passes run at the same time on different cores.
 * The trainer's own copies stay authoritative: weights go to the workers before they generate,
 * weights and optimizer state before a training phase, and both come back after it (the
 * weights also before any evaluation in the middle of one).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { computePrecision, nativeThreads, NonFiniteError, type AdamW, type BackendName, type RngStream } from "@pbrl/core-tensor";
import type { MadpoUpdateOptions } from "@pbrl/dpo";
import type { ScoringItem } from "@pbrl/models";
import {
  ParallelPolicySampler,
  type AgentPairTokens,
  type CandidateSampler,
  type GenerationSettings,
  type Policy,
  type TrainableAgent,
} from "@pbrl/preference-data";
import type { PolicyStepJob, PolicyStepResult } from "@pbrl/rl-backends";
import type { AgentTeam } from "./agent-execution.js";
import type { AgentEndpoint } from "./rank-channel.js";
import { transferables, type AgentSnapshot, type WorkerReply, type WorkerRequest } from "./worker-protocol.js";

/**
 * Worker threads run JavaScript, so from the TypeScript sources (the test suites) the built copy
 * of the worker is used; `pnpm build` (part of `pnpm install` and `pnpm test`) makes it.
 */
function workerScript(): URL {
  const here = new URL("./agent-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(here))) return here;
  const built = new URL("../../dist/parallel/agent-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`parallel_training="mp" needs the built agent worker (${fileURLToPath(built)}); run \`pnpm build\``);
}

export class AgentWorker implements AgentEndpoint {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  private stopped: Error | undefined;

  constructor(
    readonly index: number,
    threads: number,
  ) {
    // Native kernels size their thread pool from PBRL_NATIVE_THREADS: the worker's share of the cores.
    this.worker = new Worker(workerScript(), {
      // Built JavaScript needs none of this process's Node options, and some would break it: the
      // test suites' "pbrl-source" condition (TypeScript sources), --input-type, loaders.
      execArgv: [],
      env: { ...process.env, PBRL_NATIVE_THREADS: String(threads) },
    });
    // An idle worker must not keep the process alive (a trainer that is never disposed).
    this.worker.unref();
    this.worker.on("message", (reply: WorkerReply) => this.settle(reply));
    this.worker.on("error", (e) => this.stop(new Error(`agent worker ${index} failed: ${e.message}`)));
    this.worker.on("exit", (code) => this.stop(new Error(`agent worker ${index} exited (code ${code})`)));
  }

  request<T>(req: WorkerRequest, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.stopped !== undefined) return Promise.reject(this.stopped);
    const id = this.nextId++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, req }, transfer);
    });
  }

  private settle(reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    if (p === undefined) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker.unref();
    if (reply.ok) return p.resolve(reply.value);
    const { name, message, stack } = reply.error;
    const err = name === NonFiniteError.name ? new NonFiniteError(message) : new Error(`agent worker ${this.index}: ${message}`);
    if (name !== NonFiniteError.name) err.name = name;
    err.stack = stack ?? err.stack;
    p.reject(err);
  }

  private stop(err: Error): void {
    this.stopped ??= err;
    for (const p of this.pending.values()) p.reject(this.stopped);
    this.pending.clear();
  }

  async terminate(): Promise<void> {
    this.stop(new Error(`agent worker ${this.index} was closed`));
    await this.worker.terminate();
  }
}

export class AgentWorkers implements AgentTeam {
  private readonly workers: AgentEndpoint[];
  /** Whether the workers' weights have moved since the trainer's copies were last brought up to date. */
  private stepped = false;

  /** Threads each worker's native kernels use: an equal share of this process's, at least one. */
  readonly threadsPerWorker: number;

  /** ddp: each agent's agent_devices entry ("auto" where unset), which the rank holding it places it by. */
  private readonly rankDevices: readonly string[] | undefined;

  /**
   * `count` agents; by default each in a worker thread of this process. `ranks` (ddp) says which
   * ranks hold each agent (rank 0: a worker thread of this process), gives the endpoints of the
   * others, makes one endpoint of an agent's replicas, and names each agent's agent_devices entry;
   * this process's threads share its cores.
   */
  constructor(
    count: number,
    private readonly backend: BackendName,
    ranks?: {
      ranksOf: (agent: number) => number[];
      endpoint: (agent: number, rank: number) => AgentEndpoint;
      replicated: (agent: number, replicas: AgentEndpoint[]) => AgentEndpoint;
      devices: readonly string[];
    },
  ) {
    this.rankDevices = ranks?.devices;
    const ranksOf = (a: number): number[] => ranks?.ranksOf(a) ?? [0];
    const local = Array.from({ length: count }, (_, a) => a).filter((a) => ranksOf(a).includes(0)).length;
    this.threadsPerWorker = Math.max(1, Math.floor(nativeThreads() / Math.max(1, local)));
    this.workers = Array.from({ length: count }, (_, a) => {
      const held = ranksOf(a).map((r) => (r === 0 ? new AgentWorker(a, this.threadsPerWorker) : ranks!.endpoint(a, r)));
      return held.length === 1 ? held[0]! : ranks!.replicated(a, held);
    });
  }

  get count(): number {
    return this.workers.length;
  }

  /** Hands every agent's weights and optimizer state to its worker, to train (→ each agent's device, its replicas' joined by ", "). */
  load(agents: readonly TrainableAgent[]): Promise<string[]> {
    return this.send(
      agents,
      agents.map((a) => a.optimizer),
    );
  }

  /** Hands every agent's weights to its worker, to generate. */
  loadWeights(agents: readonly Pick<TrainableAgent, "model" | "padTokenId">[]): Promise<string[]> {
    return this.send(agents, undefined);
  }

  private async send(agents: readonly Pick<TrainableAgent, "model" | "padTokenId">[], optimizers: readonly AdamW[] | undefined): Promise<string[]> {
    if (agents.length !== this.count) throw new RangeError(`AgentWorkers: ${agents.length} agents for ${this.count} workers`);
    const devices = await Promise.all(
      agents.map((a, i) => {
        const weights = a.model.hostWeights();
        const optimizer = optimizers?.[i]!.getState();
        // The worker computes as this thread does: same backend and precision, the agent's device
        // (ddp: its agent_devices entry, which each rank resolves for itself).
        const req: WorkerRequest = {
          kind: "load",
          backend: this.backend,
          precision: computePrecision(),
          ...(this.rankDevices !== undefined ? { device: this.rankDevices[i]!, perRank: true } : { device: a.model.device() }),
          config: a.model.config,
          weights,
          optimizer,
          padTokenId: a.padTokenId,
        };
        return this.workers[i]!.request<string>(req, transferables(weights, optimizer));
      }),
    );
    this.stepped = false;
    return devices;
  }

  /** Agent `index`'s candidates, generated by its worker exactly as sampleAgentRows would here. */
  generate(index: number, promptIds: number[][], n: number, settings: GenerationSettings, eosTokenIds: readonly number[], rng: RngStream): Promise<number[][]> {
    return this.workers[index]!.request({ kind: "generate", promptIds, n, settings, eosTokenIds: [...eosTokenIds], rng: rng.getState() });
  }

  margins(index: number, pairs: AgentPairTokens[], scoreLastToken: boolean): Promise<number[]> {
    return this.workers[index]!.request({ kind: "margins", pairs, scoreLastToken });
  }

  step(index: number, pairs: AgentPairTokens[], others: Float32Array, options: MadpoUpdateOptions): Promise<void> {
    this.stepped = true;
    return this.workers[index]!.request({ kind: "step", pairs, others, index, options });
  }

  /** Agent `index`'s REINFORCE-family optimizer step, taken by its worker exactly as policyGradientStep would here. */
  policyStep(index: number, job: PolicyStepJob): Promise<PolicyStepResult> {
    this.stepped = true;
    return this.workers[index]!.request({ kind: "policyStep", index, job });
  }

  /** Agent `index`'s per-token log-probs on its rows, scored by its worker with the weights being trained. */
  tokenLogProbs(index: number, rows: ScoringItem[], batchSize: number): Promise<number[][]> {
    return this.workers[index]!.request({ kind: "tokenLogProbs", rows, batchSize });
  }

  /** A sampler of the workers' agents as they are now (weights loaded by `load` or `loadWeights`, and trained since). */
  sampler(policies: readonly Policy[], settings: GenerationSettings, rng: RngStream): CandidateSampler {
    return new ParallelPolicySampler(policies, settings, rng, (agent, promptIds, n, s, stream) =>
      this.generate(agent, promptIds, n, s, policies[agent]!.eosTokenIds, stream),
    );
  }

  /** Copies the workers' weights (and, with `optimizer`, their optimizer state) into the trainer's agents. */
  async pull(agents: readonly TrainableAgent[], optimizer: boolean): Promise<void> {
    if (!this.stepped && !optimizer) return;
    await Promise.all(
      agents.map(async (a, i) => {
        const snap = await this.workers[i]!.request<AgentSnapshot>({ kind: "snapshot", optimizer });
        a.model.assignHostWeights(snap.weights, `agent worker ${i}`);
        if (snap.optimizer !== undefined) a.optimizer.setState(snap.optimizer);
      }),
    );
    this.stepped = false;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
