/**
 * SIGINT/SIGTERM during training: the first asks the run to stop after the round in progress
 * and its checkpoint; a second exits at once (every file is written atomically, so that loses
 * only the unfinished round).
 */
export class StopSignals {
  requested = false;
  private readonly handler = (signal: NodeJS.Signals) => {
    if (this.requested) process.exit(signal === "SIGINT" ? 130 : 143);
    this.requested = true;
    this.onFirst(signal);
  };

  /** A stopped run's handler, kept for a late second signal until the next run handles signals. */
  private static lingering: StopSignals | undefined;

  constructor(private readonly onFirst: (signal: NodeJS.Signals) => void) {
    StopSignals.lingering?.release();
    StopSignals.lingering = undefined;
    process.on("SIGINT", this.handler);
    process.on("SIGTERM", this.handler);
  }

  /**
   * Stops handling signals, unless one asked the run to stop: then a second one, however late it
   * comes (the run may be writing its last files, or be done), still exits at once with 130/143
   * rather than meeting Node's default action (death by the signal, the run lock left behind).
   */
  dispose(): void {
    if (this.requested) StopSignals.lingering = this;
    else this.release();
  }

  private release(): void {
    process.off("SIGINT", this.handler);
    process.off("SIGTERM", this.handler);
  }
}

/**
 * A signal stopped a run while it was starting (loading, formatting and rendering its prompts),
 * before anything was written to output_dir: there is nothing to resume, and the same command
 * starts it again.
 */
export class RunStoppedError extends Error {
  override name = "RunStoppedError";
  constructor(readonly signal: NodeJS.Signals) {
    super(`${signal} received while the run was starting: it stopped before writing anything to output_dir; run the same command again to start it`);
  }
}

/**
 * Runs a trainer's start-up (`start`, given the signal to pass to what it waits on) with
 * SIGINT/SIGTERM handled: the first aborts that signal with a RunStoppedError, which is what the
 * start-up then rejects with, and a second exits at once (StopSignals). Without `handle`, signals
 * keep Node's default.
 */
export async function stoppableStart<T>(handle: boolean, log: (line: string) => void, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const signals = handle
    ? new StopSignals((sig) => {
        log(`pbrl: ${sig} received while the run is starting; stopping before anything is written (send it again to exit at once)`);
        abort.abort(new RunStoppedError(sig));
      })
    : undefined;
  try {
    const started = await start(abort.signal);
    abort.signal.throwIfAborted();
    return started;
  } catch (err) {
    // Whatever failed after the signal failed because of it.
    abort.signal.throwIfAborted();
    throw err;
  } finally {
    signals?.dispose();
  }
}
