import { currentBackend, resolveDevices, type DeviceSpec, type RngStream } from "@pbrl/core-tensor";
import { localAgents, type MadpoAgents } from "@pbrl/dpo";
import { ParallelPolicySampler, PolicySampler, type CandidateSampler, type GenerationSettings, type Policy, type TrainableAgent } from "@pbrl/preference-data";
import { localPolicyGradientAgents, type PolicyGradientAgents } from "@pbrl/rl-backends";
import { AgentWorkers } from "./agent-workers.js";
import { RankChannel } from "./rank-channel.js";
import { replicaRanks } from "./rank-messages.js";
import { ReplicatedEndpoint } from "./replicated-endpoint.js";

/** ddp channels of this process, so a command can stop the other ranks before it exits (closeRankChannels). */
const openChannels = new Set<RankChannel>();

/** Tells every other rank to stop and leaves the group (rank 0, at the end of a run; safe to call twice). */
export async function closeRankChannels(): Promise<void> {
  const all = [...openChannels];
  openChannels.clear();
  await Promise.all(all.map((c) => c.close()));
}

/**
 * The agents of one training phase, where they train: MADPO's two phases per update, the RL
 * algorithms' policy steps and scoring, and sampling with the weights being trained.
 */
export interface AgentTeam extends MadpoAgents, PolicyGradientAgents {
  readonly count: number;
  sampler(policies: readonly Policy[], settings: GenerationSettings, rng: RngStream): CandidateSampler;
}

/**
 * Where the agents generate and train (parallel_training): in this thread, or one worker
 * thread per agent. Either way the results are the same: each agent samples from its own
 * stream split off the sampler's, MADPO's two phases per update depend only on the batch, and
 * an RL policy step only on the agent's own rows and advantages.
 */
export interface AgentExecution {
  /** A sampler of the agents' candidates (one collection phase: weights as they are now). */
  sampler(policies: readonly Policy[], settings: GenerationSettings, rng: RngStream): CandidateSampler;
  /**
   * One training phase: `fn` trains through the team it is given and calls `syncWeights` before
   * anything reads the trainer's weights mid-phase (an evaluation). When `fn` resolves, the
   * trainer's agents hold the trained weights and optimizer state.
   */
  train<T>(agents: readonly TrainableAgent[], fn: (team: AgentTeam, syncWeights: () => Promise<void>) => Promise<T>): Promise<T>;
  /** Whether the agents train in worker threads. */
  readonly inWorkers: boolean;
  close(): Promise<void>;
}

const sampleHere = (policies: readonly Policy[], settings: GenerationSettings, rng: RngStream): CandidateSampler => new PolicySampler(policies, settings, rng);

/** The agents in this thread, as a team. */
export function localTeam(agents: readonly TrainableAgent[]): AgentTeam {
  return { ...localAgents(agents), ...localPolicyGradientAgents(agents), sampler: sampleHere };
}

const inThisThread: AgentExecution = {
  sampler: sampleHere,
  train: (agents, fn) => fn(localTeam(agents), async () => {}),
  close: async () => {},
  inWorkers: false,
};

class InWorkers implements AgentExecution {
  private started: AgentWorkers | undefined;
  private placementLogged = false;
  readonly inWorkers = true;

  /**
   * `ranks` (ddp): the channel to the other ranks, which hold the agents (or replicas) rank 0 does
   * not, and agent_devices, which every rank applies to the agents it holds (rank-devices.ts).
   */
  constructor(
    private readonly log: (line: string) => void,
    private readonly ranks?: { channel: RankChannel; agentDevices: DeviceSpec },
  ) {}

  private workers(count: number): AgentWorkers {
    if (this.started === undefined) {
      const backend = currentBackend();
      if (backend === undefined) throw new Error('parallel_training="mp": no tensor backend is active');
      const ranks = this.ranks?.channel;
      const agentDevices = this.ranks?.agentDevices;
      const world = RankChannel.worldSize();
      // Replica groups are named per execution: a later one never meets an earlier one's keys in the store.
      const run = `${process.pid}-${Date.now().toString(36)}`;
      this.started = new AgentWorkers(
        count,
        backend.name,
        ranks === undefined
          ? undefined
          : {
              ranksOf: (a) => replicaRanks(a, count, world),
              endpoint: (a, r) => ranks.endpoint(a, r),
              replicated: (a, replicas) => new ReplicatedEndpoint(replicas, `${run}/agent${a}`, () => ranks.store()),
              devices: resolveDevices(agentDevices, count, "agent_devices", "auto"),
            },
      );
      const t = this.started.threadsPerWorker;
      this.log(
        ranks === undefined
          ? `pbrl: parallel_training="mp": ${count} agent worker threads on ${backend.name}, ${t} compute thread${t === 1 ? "" : "s"} each`
          : world > count
            ? `pbrl: parallel_training="ddp": ${count} agents on ${world} ranks (agent a on ranks a, a + ${count}, …: data-parallel replicas) on ${backend.name}, ${t} compute thread${t === 1 ? "" : "s"} each here`
            : `pbrl: parallel_training="ddp": ${count} agents on ${world} ranks (rank r owns agent r mod ${world}) on ${backend.name}, ${t} compute thread${t === 1 ? "" : "s"} each here`,
      );
    }
    return this.started;
  }

  sampler(policies: readonly Policy[], settings: GenerationSettings, rng: RngStream): CandidateSampler {
    const workers = this.workers(policies.length);
    // The workers get the weights once per sampler, i.e. per collection phase. A worker answers
    // requests in order, so a generation posted now runs after the load: posting it at once,
    // with no await in between, lets the workers start while this thread goes on to the
    // comparator's own generation.
    const loaded = workers.loadWeights(policies);
    loaded.catch(() => {}); // a failed load surfaces through every generation that waits on it
    return new ParallelPolicySampler(policies, settings, rng, (agent, promptIds, n, s, stream) =>
      Promise.all([loaded, workers.generate(agent, promptIds, n, s, policies[agent]!.eosTokenIds, stream)]).then(([, rows]) => rows),
    );
  }

  async train<T>(agents: readonly TrainableAgent[], fn: (team: AgentTeam, syncWeights: () => Promise<void>) => Promise<T>): Promise<T> {
    const workers = this.workers(agents.length);
    const devices = await workers.load(agents);
    if (!this.placementLogged) {
      this.placementLogged = true;
      this.log(`pbrl: agent workers' devices: ${devices.map((d, a) => `agent ${a} ${d}`).join("; ")}`);
    }
    // On an error the trainer's agents keep the weights they had before this phase.
    const result = await fn(workers, () => workers.pull(agents, false));
    await workers.pull(agents, true);
    return result;
  }

  async close(): Promise<void> {
    await this.started?.close();
    this.started = undefined;
    await this.ranks?.channel.close();
  }
}

/**
 * The execution a config asks for: parallel_training="mp" with two or more actor models runs one
 * worker thread per agent; otherwise (or with one actor: nothing to run side by side) this thread.
 */
export function agentExecution(
  parallelTraining: "none" | "mp" | "ddp",
  actors: number,
  log: (line: string) => void,
  ddp: { timeoutSeconds: number; agentDevices: DeviceSpec } = { timeoutSeconds: 1800, agentDevices: null },
): AgentExecution {
  if (parallelTraining === "none") return inThisThread;
  // checkDdp has checked the world size against the agents: rank 0 trains, the others host agents.
  if (parallelTraining === "ddp") {
    const channel = new RankChannel(ddp.timeoutSeconds, log);
    openChannels.add(channel);
    return new InWorkers(log, { channel, agentDevices: ddp.agentDevices });
  }
  if (actors < 2) {
    log('pbrl: parallel_training="mp" has no effect with a single actor model; it runs in this thread');
    return inThisThread;
  }
  return new InWorkers(log);
}
