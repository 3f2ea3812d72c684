/**
 * What a config with parallel_training="ddp" needs before anything is read or written: the c10d
 * process groups of the libtorch addon, and a trainer that runs on ranks. Checked when a trainer
 * is built, so a run that cannot start leaves output_dir as it was.
 */
import { distributedAvailable, type DistributedAvailability } from "@pbrl/core-tensor";
import { ConfigError } from "../config/define-config.js";

/**
 * The trainers that run on ranks (rank 0 trains, agent a lives on rank a mod W, or on ranks a,
 * a + A, … as data-parallel replicas; rank-channel.ts):
 * all four, through the mp execution. A new trainer opts in once it is tested on ranks.
 */
export const DDP_TRAINERS: ReadonlySet<string> = new Set<string>(["madpo", "madpo_iter", "marlhf", "marlhf_iter"]);

/**
 * The problems of parallel_training for `trainerName` given whether process groups can be formed
 * and the WORLD_SIZE a launcher (pbrl train --nproc_per_node, torchrun, srun) gave this process
 * (pure: the caller asks the addon and the environment).
 */
export function ddpProblems(
  parallelTraining: string,
  trainerName: string,
  availability: DistributedAvailability,
  worldSize: number,
  usePeft = false,
  launched = true,
): string[] {
  if (parallelTraining !== "ddp") {
    // Every rank would train the whole run alone, all writing one output_dir.
    return worldSize > 1
      ? [
          `parallel_training: is "${parallelTraining}", but this process is one of WORLD_SIZE=${worldSize} ranks (started by pbrl train --nproc_per_node, torchrun or srun): ` +
            "each would train the whole run alone; set parallel_training=ddp, or start one process without a launcher",
        ]
      : [];
  }
  // Without the addon the trainer question is moot: say first how to get process groups at all.
  if (!availability.ok) return [`parallel_training: is "ddp", which needs process groups: ${availability.reason}`];
  if (!DDP_TRAINERS.has(trainerName))
    return [
      `parallel_training: is "ddp", which the ${trainerName} trainer does not run yet (ranks are not placed on agents; see docs/distributed.md): ` +
        'set parallel_training="mp" (one worker thread per agent, one process) or "none"',
    ];
  if (!launched)
    return [
      'parallel_training: is "ddp", but no launcher started this process (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are unset): run `pbrl train --nproc_per_node N …`, torchrun or srun (docs/distributed.md)',
    ];
  if (usePeft)
    return [
      'parallel_training: is "ddp", which gives every agent a model of its own on its rank; with use_peft=true the agents share one base: set parallel_training="none"',
    ];
  return [];
}

/** The world size a launcher set (WORLD_SIZE), 1 without one. */
function launchedWorldSize(): number {
  const n = Number(process.env["WORLD_SIZE"] ?? "1");
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/** Throws a ConfigError when parallel_training cannot run here; asks the addon only when ddp is asked for. */
export function checkDdp(configName: string, trainerName: string, args: { parallel_training: string; use_peft: boolean }): void {
  const parallelTraining = args.parallel_training;
  const worldSize = launchedWorldSize();
  if (parallelTraining !== "ddp" && worldSize === 1) return;
  const availability: DistributedAvailability = parallelTraining === "ddp" ? distributedAvailable() : { ok: true };
  const launched = process.env["RANK"] !== undefined && process.env["WORLD_SIZE"] !== undefined;
  const problems = ddpProblems(parallelTraining, trainerName, availability, worldSize, args.use_peft, launched);
  if (problems.length > 0) throw new ConfigError(configName, problems);
}
