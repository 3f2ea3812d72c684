/**
 * A one-line progress bar on stderr, drawn only when stderr is a terminal and the run is verbose,
 * so logs and pipes stay clean.
 */
export class ProgressBar {
  private done = 0;
  private readonly start = Date.now();
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly enabled: boolean,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  static enabledFor(verbose: boolean, stream: NodeJS.WriteStream = process.stderr): boolean {
    return verbose && stream.isTTY === true;
  }

  update(done: number, info = ""): void {
    this.done = done;
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.lastDraw < 100 && done < this.total) return;
    this.lastDraw = now;
    const width = 24;
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const filled = Math.round(frac * width);
    const elapsed = (now - this.start) / 1000;
    const eta = done > 0 ? (elapsed / done) * (this.total - done) : 0;
    const bar = "█".repeat(filled) + "░".repeat(width - filled);
    this.stream.write(`\r${this.label} ${bar} ${done}/${this.total} ${fmt(elapsed)}<${fmt(eta)}${info ? ` ${info}` : ""}\x1b[K`);
  }

  finish(info = ""): void {
    if (!this.enabled) return;
    this.lastDraw = 0;
    this.update(this.total, info);
    this.stream.write("\n");
  }
}

function fmt(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
