import { currentBackend } from "@pbrl/core-tensor";
import { localAgents, type MadpoAgents, type TrainableAgent } from "@pbrl/dpo";
import { AgentWorkers } from "./agent-workers.js";

/** Where MADPO's agent updates run: in this thread, or one worker thread per agent. */
export interface MadpoExecution {
  /**
   * One training phase: `fn` trains through the agents it is given and calls `syncWeights`
   * before anything reads the trainer's weights mid-phase (an evaluation). When `fn` resolves,
   * the trainer's agents hold the trained weights and optimizer state.
   */
  train<T>(agents: readonly TrainableAgent[], fn: (agents: MadpoAgents, syncWeights: () => Promise<void>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const inThisThread: MadpoExecution = {
  train: (agents, fn) => fn(localAgents(agents), async () => {}),
  close: async () => {},
};

class InWorkers implements MadpoExecution {
  private workers: AgentWorkers | undefined;

  constructor(private readonly log: (line: string) => void) {}

  async train<T>(agents: readonly TrainableAgent[], fn: (agents: MadpoAgents, syncWeights: () => Promise<void>) => Promise<T>): Promise<T> {
    if (this.workers === undefined) {
      const backend = currentBackend();
      if (backend === undefined) throw new Error('parallel_training="mp": no tensor backend is active');
      const w = new AgentWorkers(agents.length, backend.name);
      this.log(`pbrl: parallel_training="mp": ${w.count} agent worker threads on ${backend.name}, ${w.threadsPerWorker} compute thread${w.threadsPerWorker === 1 ? "" : "s"} each`);
      this.workers = w;
    }
    const workers = this.workers;
    await workers.load(agents);
    // On an error the trainer's agents keep the weights they had before this phase.
    const result = await fn(workers, () => workers.pull(agents, false));
    await workers.pull(agents, true);
    return result;
  }

  async close(): Promise<void> {
    await this.workers?.close();
    this.workers = undefined;
  }
}

/**
 * The execution a config asks for: parallel_training="mp" with two or more actor models runs one
 * worker thread per agent; otherwise (or with one actor: nothing to run side by side) this thread.
 */
export function madpoExecution(parallelTraining: "none" | "mp", actors: number, log: (line: string) => void): MadpoExecution {
  if (parallelTraining === "none") return inThisThread;
  if (actors < 2) {
    log('pbrl: parallel_training="mp" has no effect with a single actor model; it trains in this thread');
    return inThisThread;
  }
  return new InWorkers(log);
}
