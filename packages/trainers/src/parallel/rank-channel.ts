/**
 * parallel_training="ddp", the simplest placement that fits the mp design: rank 0 runs the
 * trainer; every rank hosts the agents placed on it (replicaRanks: agent a on rank a mod W, or on
 * ranks a, a + A, … as data-parallel replicas when there are more ranks than agents) in worker
 * threads of its own (the mp workers) and answers the trainer's requests for them
 * (worker-protocol.ts) over the c10d group.
 * Every exchange is collective and in lockstep: rank 0 broadcasts a header [1, bytes] (or [0, 0]
 * to stop) and the batch of requests made since the last exchange; each rank passes the requests
 * for its agents to their workers in order and answers; the answers come back by allGather (their
 * lengths first, then the bytes padded to the longest). Requests for different agents in one
 * batch run at the same time on their ranks, as mp's threads do.
 */
import { NonFiniteError, processGroupFromEnv, tf, type ProcessGroup } from "@pbrl/core-tensor";
import type { WorkerRequest } from "./worker-protocol.js";
import { packMessage, unpackMessage } from "./rank-messages.js";

/** A request for agent `agent` held by rank `rank`, numbered by rank 0. */
interface Envelope {
  id: number;
  agent: number;
  rank: number;
  req: WorkerRequest;
}
type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; name: string; message: string; stack: string | undefined };

/** Where a rank's requests go: one agent's worker (an AgentWorker thread). */
export interface AgentEndpoint {
  request<T>(req: WorkerRequest, transfer?: ArrayBuffer[]): Promise<T>;
  terminate(): Promise<void>;
}

async function broadcastWords(group: ProcessGroup, words: Int32Array): Promise<Int32Array> {
  const t = tf.tensor1d(words, "int32");
  const [out] = await group.broadcast([t], 0);
  t.dispose();
  const data = (await out!.data()) as Int32Array;
  out!.dispose();
  return data;
}

/** Every rank's words, in rank order: lengths first, then the words padded to the longest. */
async function gatherWords(group: ProcessGroup, words: Int32Array, bytes: number): Promise<{ words: Int32Array; bytes: number }[]> {
  const len = tf.tensor1d([words.length, bytes], "int32");
  const lens = await group.allGather(len);
  len.dispose();
  const sizes = await Promise.all(lens.map(async (t) => Array.from((await t.data()) as Int32Array)));
  tf.dispose(lens);
  const longest = Math.max(1, ...sizes.map((s) => s[0]!));
  const padded = new Int32Array(longest);
  padded.set(words);
  const t = tf.tensor1d(padded, "int32");
  const all = await group.allGather(t);
  t.dispose();
  const out = await Promise.all(all.map(async (a, r) => ({ words: (await a.data()) as Int32Array, bytes: sizes[r]![1]! })));
  tf.dispose(all);
  return out;
}

/** Answers the envelopes for this rank's agents, each agent's in order, agents side by side. */
async function answer(envelopes: readonly Envelope[], endpoint: (agent: number) => AgentEndpoint): Promise<Answer[]> {
  const byAgent = new Map<number, Envelope[]>();
  for (const e of envelopes) byAgent.set(e.agent, [...(byAgent.get(e.agent) ?? []), e]);
  const answers = await Promise.all(
    [...byAgent.entries()].map(([agent, list]) =>
      Promise.all(
        list.map((e) =>
          endpoint(agent)
            .request(e.req)
            .then(
              (value): Answer => ({ id: e.id, ok: true, value }),
              (err: unknown): Answer => {
                const x = err instanceof Error ? err : new Error(String(err));
                return { id: e.id, ok: false, name: x.name, message: x.message, stack: x.stack };
              },
            ),
        ),
      ),
    ),
  );
  return answers.flat();
}

/** Rank 0's side: endpoints for the agents other ranks own, batched into lockstep exchanges. */
export class RankChannel {
  private group: Promise<ProcessGroup> | undefined;
  private nextId = 0;
  private batch: { env: Envelope; resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Bytes rank 0 broadcast and gathered, by the kinds of request an exchange carried ("load", "margins+step", …). */
  private readonly traffic = new Map<string, { exchanges: number; sent: number; received: number }>();

  /** `log`: where the traffic summary goes when the channel closes. */
  constructor(
    private readonly timeoutSeconds: number,
    private readonly log?: (line: string) => void,
  ) {}

  private joined(): Promise<ProcessGroup> {
    this.group ??= processGroupFromEnv({ timeoutSeconds: this.timeoutSeconds });
    return this.group;
  }

  /** The world size the launcher gave this process (WORLD_SIZE). */
  static worldSize(): number {
    return Number(process.env["WORLD_SIZE"] ?? "1");
  }

  /** The run's group (its store's address and port: where the agents' replica groups meet). */
  async store(): Promise<{ masterAddr: string; masterPort: number; timeoutSeconds: number }> {
    const g = await this.joined();
    return { masterAddr: g.masterAddr, masterPort: g.masterPort, timeoutSeconds: g.timeoutSeconds };
  }

  /** Agent `agent` as rank `rank` holds it. */
  endpoint(agent: number, rank: number): AgentEndpoint {
    return {
      request: <T>(req: WorkerRequest) => this.request<T>(agent, rank, req),
      terminate: async () => {},
    };
  }

  private request<T>(agent: number, rank: number, req: WorkerRequest): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`parallel_training="ddp": agent ${agent}'s rank was asked after the ranks were stopped`));
    return new Promise<T>((resolve, reject) => {
      this.batch.push({ env: { id: this.nextId++, agent, rank, req }, resolve: resolve as (v: unknown) => void, reject });
      // Requests made in the same turn of the event loop (one per agent or replica) go in one exchange.
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          const batch = this.batch;
          this.batch = [];
          this.flushing = this.flushing.then(() => this.exchange(batch));
        });
      }
    });
  }

  private async exchange(batch: { env: Envelope; resolve: (v: unknown) => void; reject: (e: Error) => void }[]): Promise<void> {
    try {
      const group = await this.joined();
      const packed = packMessage(batch.map((b) => b.env));
      await broadcastWords(group, new Int32Array([1, packed.bytes, packed.words.length]));
      await broadcastWords(group, packed.words);
      const gathered = await gatherWords(group, new Int32Array(0), 0);
      this.count(
        batch.map((b) => b.env.req.kind),
        packed.words.length * 4,
        gathered.reduce((n, g) => n + g.words.length * 4, 0),
      );
      const answers = new Map<number, Answer>();
      for (const g of gathered.slice(1)) for (const a of unpackMessage<Answer[]>(g.words, g.bytes)) answers.set(a.id, a);
      for (const b of batch) {
        const a = answers.get(b.env.id);
        if (a === undefined) b.reject(new Error(`parallel_training="ddp": rank ${b.env.rank} did not answer the request for agent ${b.env.agent}`));
        else if (a.ok) b.resolve(a.value);
        else {
          const err = a.name === NonFiniteError.name ? new NonFiniteError(a.message) : new Error(`agent ${b.env.agent} (rank ${b.env.rank}): ${a.message}`);
          if (a.name !== NonFiniteError.name) err.name = a.name;
          err.stack = a.stack ?? err.stack;
          b.reject(err);
        }
      }
    } catch (e) {
      for (const b of batch) b.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private count(kinds: readonly string[], sent: number, received: number): void {
    const key = [...new Set(kinds)].sort().join("+");
    const t = this.traffic.get(key) ?? { exchanges: 0, sent: 0, received: 0 };
    this.traffic.set(key, { exchanges: t.exchanges + 1, sent: t.sent + sent, received: t.received + received });
  }

  /** What went through the channel, by kinds of request, e.g. "load: 2 exchanges, 1.2 MB out, 0.0 MB back". */
  trafficSummary(): string {
    const mb = (b: number) => (b / 1e6).toFixed(b < 1e5 ? 3 : 1);
    return [...this.traffic]
      .map(([k, t]) => `${k}: ${t.exchanges} exchange${t.exchanges === 1 ? "" : "s"}, ${mb(t.sent)} MB out, ${mb(t.received)} MB back`)
      .join("; ");
  }

  /** Tells the other ranks to stop (after every exchange in flight) and leaves the group. */
  close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    await this.flushing;
    if (this.traffic.size > 0) this.log?.(`pbrl: ddp traffic between rank 0 and the other ranks (rank 0's side, payload only): ${this.trafficSummary()}`);
    if (this.group === undefined) return;
    // A group that never formed or already failed (a rank died) cannot be told anything: its
    // error has reached the run, and the launcher stops the ranks still waiting.
    const group = await this.group.catch(() => undefined);
    if (group === undefined) return;
    try {
      await broadcastWords(group, new Int32Array([0, 0, 0]));
    } catch {
      // as above
    } finally {
      group.destroy();
    }
  }
}

/**
 * A rank ≥ 1's whole life: join the group, then answer rank 0's batches for the agents this rank
 * owns (through `endpoint`, one worker per agent) until rank 0 says stop. Returns how many
 * requests of each kind it answered.
 */
export async function serveAgents(group: ProcessGroup, endpoint: (agent: number) => AgentEndpoint): Promise<Map<WorkerRequest["kind"], number>> {
  const served = new Map<WorkerRequest["kind"], number>();
  for (;;) {
    const header = await broadcastWords(group, new Int32Array(3));
    if (header[0] === 0) return served;
    const words = await broadcastWords(group, new Int32Array(header[2]!));
    const envelopes = unpackMessage<Envelope[]>(words, header[1]!).filter((e) => e.rank === group.rank);
    for (const e of envelopes) served.set(e.req.kind, (served.get(e.req.kind) ?? 0) + 1);
    const packed = packMessage(await answer(envelopes, endpoint));
    await gatherWords(group, packed.words, packed.bytes);
  }
}
