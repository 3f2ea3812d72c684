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

  constructor(private readonly onFirst: (signal: NodeJS.Signals) => void) {
    process.on("SIGINT", this.handler);
    process.on("SIGTERM", this.handler);
  }

  dispose(): void {
    process.off("SIGINT", this.handler);
    process.off("SIGTERM", this.handler);
  }
}
