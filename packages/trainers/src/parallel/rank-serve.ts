/**
 * A rank ≥ 1 of parallel_training="ddp": it runs no trainer; it hosts the agents placed on it
 * (agent a on rank a mod W, or its replicas on ranks a, a + A, … when there are more ranks than
 * agents) in worker threads and answers rank 0's requests for them until told to stop.
 */
import { nativeThreads, processGroupFromEnv, useBackend } from "@pbrl/core-tensor";
import { AgentWorker } from "./agent-workers.js";
import { serveAgents } from "./rank-channel.js";
import { agentsOnRank } from "./rank-messages.js";

export async function serveAgentRank(options: { numAgents: number; timeoutSeconds: number; log: (line: string) => void }): Promise<void> {
  // This thread only moves messages (int32 tensors); its agents' workers take rank 0's backend.
  await useBackend("cpu");
  const group = await processGroupFromEnv({ timeoutSeconds: options.timeoutSeconds });
  const owned = agentsOnRank(group.rank, options.numAgents, group.worldSize);
  const threads = Math.max(1, Math.floor(nativeThreads() / Math.max(1, owned.length)));
  options.log(
    `pbrl: rank ${group.rank} of ${group.worldSize} (pid ${process.pid}): hosting agent${owned.length === 1 ? "" : "s"} ${owned.join(", ")}, ${threads} compute thread${threads === 1 ? "" : "s"} each`,
  );
  const workers = new Map<number, AgentWorker>();
  const endpoint = (agent: number): AgentWorker => {
    let w = workers.get(agent);
    if (w === undefined) workers.set(agent, (w = new AgentWorker(agent, threads)));
    return w;
  };
  try {
    const served = await serveAgents(group, endpoint);
    const kinds = [...served].map(([kind, n]) => `${n} ${kind}`).join(", ");
    options.log(`pbrl: rank ${group.rank} of ${group.worldSize}: done; served ${kinds === "" ? "no requests" : kinds}`);
  } finally {
    await Promise.all([...workers.values()].map((w) => w.terminate()));
    group.destroy();
  }
}
