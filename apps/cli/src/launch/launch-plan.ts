/**
 * What `pbrl train --nproc_per_node N` starts on this host, as torchrun does: N ranks of a world
 * of nnodes × N, each with torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE) and OMP_NUM_THREADS = its share of the cores unless the user set
 * it. Pure: the caller passes the environment, the core count and a free port.
 */
import { UsageError } from "../io.js";

/** The launcher's flags, as given on the command line (strings, from parseArgs). */
export interface LaunchFlags {
  nproc_per_node?: string;
  nnodes?: string;
  node_rank?: string;
  master_addr?: string;
  master_port?: string;
}

export const LAUNCH_FLAG_NAMES = ["nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port"] as const;

/** torchrun's default rendezvous port when several hosts must agree on one. */
export const DEFAULT_MASTER_PORT = 29500;

export interface RankSpec {
  rank: number;
  localRank: number;
  /** The variables this rank's process gets on top of the launcher's environment. */
  env: Record<string, string>;
}

export interface LaunchPlan {
  nnodes: number;
  nodeRank: number;
  nprocPerNode: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** One host alone, rendezvous on loopback through a free port (torchrun --standalone). */
  standalone: boolean;
  ranks: RankSpec[];
}

type Env = Readonly<Record<string, string | undefined>>;

/** A variable set to something: an empty one counts as unset, as the shells' `VAR= cmd` means. */
const given = (v: string | undefined) => (v === undefined || v === "" ? undefined : v);

function count(flag: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`pbrl train: --${flag} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * The plan for this host. Flags win over the environment; the environment fills what they leave:
 * MASTER_ADDR and MASTER_PORT (torchrun's, or a Kubernetes Job's), SLURM_NNODES and SLURM_NODEID
 * (srun's) for --nnodes and --node_rank. `freePort` is used only on a single host without a port.
 */
export function launchPlan(flags: LaunchFlags, env: Env, cores: number, freePort: number): LaunchPlan {
  if (env["RANK"] !== undefined && env["WORLD_SIZE"] !== undefined && env["LOCAL_RANK"] !== undefined)
    throw new UsageError(
      `pbrl train: --nproc_per_node starts ranks, but this process already is rank ${env["RANK"]} of ${env["WORLD_SIZE"]} (RANK, WORLD_SIZE and LOCAL_RANK are set, as torchrun or srun set them): drop --nproc_per_node, or unset them`,
    );
  const nproc = count("nproc_per_node", flags.nproc_per_node, 1);
  if (nproc === undefined) throw new UsageError("pbrl train: --nproc_per_node N is required to launch ranks");
  const nnodes = count("nnodes", flags.nnodes, 1) ?? count("nnodes (from SLURM_NNODES)", env["SLURM_NNODES"], 1) ?? 1;
  const nodeRank = count("node_rank", flags.node_rank, 0) ?? count("node_rank (from SLURM_NODEID)", env["SLURM_NODEID"], 0) ?? 0;
  if (nodeRank >= nnodes) throw new UsageError(`pbrl train: --node_rank ${nodeRank} is not below --nnodes ${nnodes}: hosts are numbered 0 … ${nnodes - 1}`);
  const addr = flags.master_addr ?? env["MASTER_ADDR"];
  const port = count("master_port", flags.master_port, 1) ?? count("master_port (from MASTER_PORT)", env["MASTER_PORT"], 1);
  if (port !== undefined && port > 65535) throw new UsageError(`pbrl train: --master_port must be a TCP port (1 … 65535), got ${port}`);
  if (nnodes > 1 && (addr === undefined || addr === ""))
    throw new UsageError(
      `pbrl train: --nnodes ${nnodes} needs --master_addr (or MASTER_ADDR): the host name or address of node 0, which every host can reach; see docs/distributed.md`,
    );
  const standalone = nnodes === 1 && (addr === undefined || addr === "") && port === undefined;
  const masterAddr = addr === undefined || addr === "" ? "127.0.0.1" : addr;
  const masterPort = port ?? (standalone ? freePort : DEFAULT_MASTER_PORT);
  const worldSize = nnodes * nproc;
  // torchrun's convention: each local rank gets its share of the cores unless the user chose.
  const threads = String(Math.max(1, Math.floor(cores / nproc)));
  const ranks: RankSpec[] = [];
  for (let localRank = 0; localRank < nproc; localRank++) {
    const rank = nodeRank * nproc + localRank;
    ranks.push({
      rank,
      localRank,
      env: {
        MASTER_ADDR: masterAddr,
        MASTER_PORT: String(masterPort),
        RANK: String(rank),
        WORLD_SIZE: String(worldSize),
        LOCAL_RANK: String(localRank),
        LOCAL_WORLD_SIZE: String(nproc),
        GROUP_RANK: String(nodeRank),
        OMP_NUM_THREADS: given(env["OMP_NUM_THREADS"]) ?? threads,
        // pbrl's own pool (OpenBLAS and the libtorch addon's intra-op threads): the same share.
        PBRL_NATIVE_THREADS: given(env["PBRL_NATIVE_THREADS"]) ?? given(env["OMP_NUM_THREADS"]) ?? threads,
      },
    });
  }
  return { nnodes, nodeRank, nprocPerNode: nproc, worldSize, masterAddr, masterPort, standalone, ranks };
}

/** The command line each rank runs: the launcher's own, without the launcher's flags. */
export function rankArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const name = /^--([a-z_]+)(=.*)?$/.exec(a);
    if (name !== null && (LAUNCH_FLAG_NAMES as readonly string[]).includes(name[1]!)) {
      if (name[2] === undefined) i++; // "--flag value": skip the value too
      continue;
    }
    out.push(a);
  }
  return out;
}
