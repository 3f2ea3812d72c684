/**
 * The CLI's side of the reward worker thread (reward-worker.ts). The reward and formatters modules
 * of a run file run there, so a reward or formatter that loops or computes for minutes never
 * blocks this thread: Ctrl-C and SIGTERM are still handled (while the run starts, the first stops
 * it; in a round, the first finishes the round, a second exits at once, which ends the worker
 * with the process), and a call longer than reward_timeout_s stops the worker.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { asError, errorText, timerDelayMs } from "@pbrl/core-tensor";
import { RewardError, RewardTimeoutError as BaseRewardTimeoutError } from "@pbrl/preference-data";
import { moduleLoadError, RewardModuleError } from "./module-errors.js";
import type { CallBody, CallReply, CallRequest, ReadyMessage, RewardWorkerData, WorkerMessage } from "./protocol.js";

/**
 * A reward call (or module load) that took longer than reward_timeout_s: preference-data's error,
 * so its scoring passes it on unwrapped, with this message naming the module.
 */
export class RewardTimeoutError extends BaseRewardTimeoutError {
  constructor(message: string, timeoutS: number) {
    super(message, timeoutS, -1);
  }
}

/** The timer delay for reward_timeout_s (at most a timer's longest), or undefined for no limit. */
const delayMs = (timeoutS: number | null): number | undefined => (typeof timeoutS === "number" && timeoutS > 0 ? timerDelayMs(timeoutS) : undefined);

/** Worker threads run JavaScript: from the TypeScript sources (tests), the built copy is used. */
function workerScript(): URL {
  const here = new URL("./reward-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(here))) return here;
  const built = new URL("../../dist/reward/reward-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`reward modules run in a worker thread whose script is not built (${fileURLToPath(built)}); run \`pnpm --filter pbrl build\``);
}

type Result = Extract<CallReply, { type: "result" }>;

/** The modules a worker runs, for messages. */
const moduleFiles = (m: RewardWorkerData): string => [m.rewardModule, m.processorModule, m.formattersModule].filter((f) => f !== undefined).join(" and ");
interface Pending {
  resolve: (r: Result) => void;
  reject: (e: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
}

export interface RewardModules extends RewardWorkerData {
  /** reward_timeout_s: seconds a call may take; null for no limit. */
  timeoutS: number | null;
}

export class RewardWorker {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private ended: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly modules: RewardModules,
    readonly ready: Extract<ReadyMessage, { type: "ready" }>,
  ) {
    worker.on("message", (m: WorkerMessage) => this.onMessage(m));
    worker.on("error", (e) => this.fail(new RewardError(`the reward worker thread running ${this.files()} crashed: ${errorText(e)}`)));
    worker.on("exit", (code) =>
      this.fail(new RewardError(`the reward worker thread running ${this.files()} exited (code ${code}); a reward module must not call process.exit`)),
    );
    // Idle, it must not keep the process alive; call() refs it while an answer is awaited.
    worker.unref();
  }

  /** Starts the worker and waits until its modules are loaded; load errors name the module. */
  static async start(modules: RewardModules): Promise<RewardWorker> {
    const data: RewardWorkerData = {
      ...(modules.rewardModule !== undefined ? { rewardModule: modules.rewardModule } : {}),
      ...(modules.processorModule !== undefined ? { processorModule: modules.processorModule } : {}),
      ...(modules.formattersModule !== undefined ? { formattersModule: modules.formattersModule } : {}),
    };
    // Built JavaScript needs none of this process's Node options (the tests' source conditions, loaders).
    const worker = new Worker(workerScript(), { workerData: data, execArgv: [] });
    const files = moduleFiles(modules);
    const ready = await new Promise<ReadyMessage>((resolve, reject) => {
      const ms = delayMs(modules.timeoutS);
      const timer =
        ms === undefined
          ? undefined
          : setTimeout(
              () =>
                settle(
                  new RewardTimeoutError(
                    `loading ${files} took longer than reward_timeout_s=${modules.timeoutS} s; a module's top-level code must not loop (raise reward_timeout_s, or null for no limit)`,
                    modules.timeoutS ?? 0,
                  ),
                ),
              ms,
            );
      const onMessage = (m: ReadyMessage) => settle(m);
      const onError = (e: unknown) => settle(new RewardModuleError(`loading ${files} failed: ${errorText(e)}`));
      const onExit = (code: number) =>
        settle(new RewardModuleError(`loading ${files} failed: its worker thread exited (code ${code}); a reward module must not call process.exit`));
      // Only our own listeners come off: Worker keeps internal ones (removeAllListeners would stop its messages).
      function settle(r: ReadyMessage | Error): void {
        clearTimeout(timer);
        worker.off("message", onMessage).off("error", onError).off("exit", onExit);
        if (r instanceof Error) reject(r);
        else resolve(r);
      }
      worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    }).catch(async (e: unknown) => {
      await worker.terminate();
      throw e;
    });
    if (ready.type === "load-error") {
      await worker.terminate();
      if (ready.missing && ready.key === "formatters")
        throw new RewardModuleError(`formatters: ${ready.file} exports no function or list of functions named formatters (or a default export)`);
      if (ready.missing) throw new RewardModuleError(`${ready.key}: ${ready.file} exports no function named ${ready.key} (or a default export)`);
      throw moduleLoadError(ready.key, ready.file, ready.name, ready.message, ready.frame);
    }
    return new RewardWorker(worker, modules, ready);
  }

  /** reward_func on the worker: what it returned, and reward_processor's outcome per value when the worker holds one. */
  reward(completions: string[][], context: unknown): Promise<Result> {
    return this.call({ kind: "reward", completions, context }, `reward_func in ${this.modules.rewardModule}`);
  }

  /** reward_processor on the worker, for each of `values` (non-finite values get null). */
  process(values: number[]): Promise<Result> {
    return this.call({ kind: "process", values }, `reward_processor in ${this.modules.processorModule ?? this.modules.rewardModule}`);
  }

  /** Formatter `index` of the formatters module (the shared one, if it exports one function) on `item`: what it returned. */
  async format(index: number, item: unknown): Promise<unknown> {
    const shape = this.ready.formatters;
    const name = shape === undefined || shape.shared ? "formatters" : `formatters[${index}]`;
    return (await this.call({ kind: "format", index, item }, `${name} in ${this.modules.formattersModule}`)).returned;
  }

  /** Stops the worker (a busy one too); pending calls fail. */
  async close(): Promise<void> {
    this.fail(new RewardError("the reward worker thread was closed"));
    await this.worker.terminate();
  }

  private files(): string {
    return moduleFiles(this.modules);
  }

  private call(req: CallBody, what: string): Promise<Result> {
    if (this.ended !== undefined) return Promise.reject(this.ended);
    const id = this.nextId++;
    return new Promise<Result>((resolve, reject) => {
      const p: Pending = { resolve, reject };
      // Timed from the call, as the trainer times it, and created before the trainer's own timer
      // so that this one, which names the module and stops the worker, fires first.
      const ms = delayMs(this.modules.timeoutS);
      if (ms !== undefined) p.timer = setTimeout(() => this.timedOut(what), ms);
      this.pending.set(id, p);
      this.worker.ref();
      try {
        this.worker.postMessage({ ...req, id } as CallRequest);
      } catch (e) {
        this.settle(id);
        reject(new RewardError(`${what}: its arguments cannot be sent to the reward worker thread (${(e as Error).message})`));
      }
    });
  }

  private onMessage(m: WorkerMessage): void {
    if (m.type === "ready" || m.type === "load-error") return;
    const p = this.pending.get(m.id);
    if (p === undefined) return;
    this.settle(m.id);
    if (m.type === "result") p.resolve(m);
    else p.reject(typeof m.thrown === "string" ? new Error(m.thrown) : asError(m.thrown));
  }

  private timedOut(what: string): void {
    const t = this.modules.timeoutS;
    this.fail(
      new RewardTimeoutError(
        `${what} did not return within reward_timeout_s=${t} s, so its worker thread was stopped; make the function faster, or raise reward_timeout_s (null: no limit)`,
        t ?? 0,
      ),
    );
    void this.worker.terminate();
  }

  private settle(id: number): void {
    const p = this.pending.get(id);
    if (p?.timer !== undefined) clearTimeout(p.timer);
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.unref();
  }

  /** Ends the worker's use: every pending call and every later one fails with `err`. */
  private fail(err: Error): void {
    if (this.ended !== undefined) return;
    this.ended = err;
    for (const [id, p] of [...this.pending]) {
      this.settle(id);
      p.reject(err);
    }
  }
}
