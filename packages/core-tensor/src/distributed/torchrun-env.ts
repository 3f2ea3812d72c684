/**
 * A process group's settings, from the caller or from torchrun's environment (the variables
 * torchrun, Slurm wrappers and Kubernetes launchers set for every rank). Pure functions: they
 * read only what they are given.
 */
import type { ProcessGroupBackend } from "./addon-functions.js";

/** transformers' `ddp_timeout` default (seconds): how long a rank waits for the others. */
export const DEFAULT_DDP_TIMEOUT_SECONDS = 1800;

export interface ProcessGroupOptions {
  /** This process's rank, in [0, worldSize). */
  rank: number;
  /** How many ranks the group has. */
  worldSize: number;
  /** Where rank 0 hosts the rendezvous store (a host name or address every rank can reach). */
  masterAddr: string;
  /** The store's port; 0 lets rank 0 pick a free one (then tell the others {@link ProcessGroup.masterPort}). */
  masterPort: number;
  /** How long forming the group and every collective may wait for the other ranks; transformers' `ddp_timeout`. Default 1800. */
  timeoutSeconds?: number;
  /**
   * Called once this rank's store connection is up, with the store's port — on rank 0 the one it
   * picked when given 0, for a launcher to hand to the other ranks — before the group forms.
   */
  onStoreReady?: (masterPort: number) => void;
  /**
   * A group formed beside another through the store that one already runs (one agent's
   * data-parallel replicas): its name, the same on its ranks and unique among a run's groups.
   * Every rank, its rank 0 too, connects to the running store at masterAddr:masterPort.
   */
  subgroup?: string;
  /**
   * "gloo" (default): CPU tensors, CUDA ones through host memory; "nccl": CUDA tensors on
   * `cudaDevice`, GPU to GPU (an addon built against a CUDA libtorch with NCCL; see
   * {@link distributedBackends}).
   */
  backend?: ProcessGroupBackend;
  /** With "nccl": this rank's CUDA device index (default 0; {@link processGroupFromEnv} gives LOCAL_RANK). */
  cudaDevice?: number;
}

/** The settings torchrun gives each rank. */
export interface TorchrunEnv {
  rank: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** The rank among this host's ranks (torchrun's LOCAL_RANK; RANK when unset). */
  localRank: number;
  /** How many ranks run on this host (torchrun's LOCAL_WORLD_SIZE; WORLD_SIZE when unset). */
  localWorldSize: number;
}

/** Settings that cannot form a group; the message lists every problem and how to fix it. */
export class DistributedConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid process group settings:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "DistributedConfigError";
  }
}

const LAUNCH_HINT = "launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)";

/** An integer ≥ min from an environment value, or a problem. */
function envInt(env: Readonly<Record<string, string | undefined>>, name: string, min: number, problems: string[]): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") {
    problems.push(`${name} is not set: ${LAUNCH_HINT}`);
    return undefined;
  }
  if (!/^\s*\d+\s*$/.test(raw)) {
    problems.push(`${name}=${JSON.stringify(raw)} is not a whole number ≥ ${min}`);
    return undefined;
  }
  const n = Number(raw);
  if (n < min) {
    problems.push(`${name}=${n} must be at least ${min}`);
    return undefined;
  }
  return n;
}

/**
 * torchrun's variables: MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (required), LOCAL_RANK
 * and LOCAL_WORLD_SIZE (default: RANK and WORLD_SIZE, as for ranks that all run on one host).
 * Throws a {@link DistributedConfigError} naming every missing or invalid value.
 */
export function parseTorchrunEnv(env: Readonly<Record<string, string | undefined>>): TorchrunEnv {
  const problems: string[] = [];
  const masterAddr = (env["MASTER_ADDR"] ?? "").trim();
  if (masterAddr === "") problems.push(`MASTER_ADDR is not set: ${LAUNCH_HINT}`);
  const masterPort = envInt(env, "MASTER_PORT", 1, problems);
  if (masterPort !== undefined && masterPort > 65535) problems.push(`MASTER_PORT=${masterPort} is not a port (1 to 65535)`);
  const worldSize = envInt(env, "WORLD_SIZE", 1, problems);
  const rank = envInt(env, "RANK", 0, problems);
  if (rank !== undefined && worldSize !== undefined && rank >= worldSize)
    problems.push(`RANK=${rank} must be below WORLD_SIZE=${worldSize} (ranks count from 0)`);
  const hasLocal = (name: string) => (env[name] ?? "").trim() !== "";
  const localWorldSize = hasLocal("LOCAL_WORLD_SIZE") ? envInt(env, "LOCAL_WORLD_SIZE", 1, problems) : worldSize;
  const localRank = hasLocal("LOCAL_RANK") ? envInt(env, "LOCAL_RANK", 0, problems) : rank;
  if (localWorldSize !== undefined && worldSize !== undefined && localWorldSize > worldSize) {
    problems.push(`LOCAL_WORLD_SIZE=${localWorldSize} must not exceed WORLD_SIZE=${worldSize}`);
  }
  if (localRank !== undefined && localWorldSize !== undefined && localRank >= localWorldSize) {
    problems.push(`LOCAL_RANK=${localRank} must be below LOCAL_WORLD_SIZE=${localWorldSize}`);
  }
  if (problems.length > 0) throw new DistributedConfigError(problems);
  return { rank: rank!, worldSize: worldSize!, masterAddr, masterPort: masterPort!, localRank: localRank!, localWorldSize: localWorldSize! };
}

/** The options with the timeout filled in; throws a {@link DistributedConfigError} naming every invalid field. */
export function checkProcessGroupOptions(o: ProcessGroupOptions): Required<Omit<ProcessGroupOptions, "onStoreReady" | "subgroup">> & { subgroup?: string } {
  const backend = o.backend ?? "gloo";
  const cudaDevice = o.cudaDevice ?? 0;
  const problems: string[] = [];
  const whole = (v: number, min: number) => Number.isInteger(v) && v >= min;
  if (!whole(o.worldSize, 1)) problems.push(`worldSize ${o.worldSize} must be a whole number ≥ 1`);
  if (!whole(o.rank, 0)) problems.push(`rank ${o.rank} must be a whole number ≥ 0`);
  else if (whole(o.worldSize, 1) && o.rank >= o.worldSize) problems.push(`rank ${o.rank} must be below worldSize ${o.worldSize} (ranks count from 0)`);
  if (o.masterAddr.trim() === "") problems.push("masterAddr is empty: give the host name or address of rank 0");
  if (!whole(o.masterPort, 0) || o.masterPort > 65535) problems.push(`masterPort ${o.masterPort} is not a port (0 to 65535; 0: rank 0 picks a free one)`);
  else if (o.masterPort === 0 && o.subgroup !== undefined) problems.push("masterPort 0: a subgroup joins a running store; give its port");
  else if (o.masterPort === 0 && o.rank !== 0) problems.push("masterPort 0 only lets rank 0 pick a port; the other ranks need the port it picked");
  if (o.subgroup !== undefined && o.subgroup.trim() === "") problems.push("subgroup is empty: name the group (the same on its ranks)");
  const timeoutSeconds = o.timeoutSeconds ?? DEFAULT_DDP_TIMEOUT_SECONDS;
  // c10d counts milliseconds in 64 bits; beyond a year is surely a unit mistake.
  if (!(timeoutSeconds > 0) || timeoutSeconds > 365 * 86400) problems.push(`timeoutSeconds ${timeoutSeconds} must be above 0 (and at most a year)`);
  if (backend !== "gloo" && backend !== "nccl") problems.push(`backend ${JSON.stringify(backend)} is not a process group backend (gloo or nccl)`);
  if (!whole(cudaDevice, 0)) problems.push(`cudaDevice ${cudaDevice} must be a whole number ≥ 0 (a CUDA device index)`);
  if (problems.length > 0) throw new DistributedConfigError(problems);
  const checked = { rank: o.rank, worldSize: o.worldSize, masterAddr: o.masterAddr.trim(), masterPort: o.masterPort, timeoutSeconds, backend, cudaDevice };
  return o.subgroup === undefined ? checked : { ...checked, subgroup: o.subgroup };
}
