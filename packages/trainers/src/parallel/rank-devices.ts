/**
 * Where an agent computes on a parallel_training="ddp" rank. An agent_devices entry names a
 * device of the rank's own host, so it keeps its meaning on every rank; "auto" (agent_devices
 * unset) is torchrun's placement, one GPU per local rank (cuda:LOCAL_RANK), where the rank's
 * libtorch sees GPUs, and the backend's device (the CPU) where it sees none.
 */
import { DeviceUnavailableError, resolveDevices, type DeviceSpec } from "@pbrl/core-tensor";

export function rankDevice(entry: string, localRank: number, cudaDevices: number): string {
  if (entry !== "auto" || cudaDevices === 0) return entry;
  if (localRank >= cudaDevices) {
    throw new DeviceUnavailableError(
      `parallel_training="ddp": local rank ${localRank} has no GPU of its own (this host's libtorch sees ${cudaDevices}): start at most ${cudaDevices} rank${cudaDevices === 1 ? "" : "s"} per host (--nproc_per_node), or set agent_devices`,
    );
  }
  return `cuda:${localRank}`;
}

/** Each agent's device on a rank that holds it: agent_devices resolved, "auto" where unset, then {@link rankDevice}. */
export function rankDevices(spec: DeviceSpec, count: number, localRank: number, cudaDevices: number): string[] {
  return resolveDevices(spec, count, "agent_devices", "auto").map((d) => rankDevice(d, localRank, cudaDevices));
}

/**
 * Rank 0's agents' devices ({@link rankDevices}), once every local rank of its host is known to
 * have a GPU of its own wherever agent_devices leaves the choice to the rank: checked up front on
 * rank 0, before the run folder is touched, rather than by a rank's first load mid-round.
 */
export function hostRankDevices(spec: DeviceSpec, count: number, env: { localRank: number; localWorldSize: number }, cudaDevices: number): string[] {
  rankDevices(spec, count, env.localWorldSize - 1, cudaDevices);
  return rankDevices(spec, count, env.localRank, cudaDevices);
}
