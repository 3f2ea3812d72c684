/**
 * Progress of long phases on stderr, when the run is verbose. On a terminal: a one-line bar
 * redrawn in place. Otherwise (CI, a log file, nohup): a plain line every few seconds with the
 * phase, done/total, rate, ETA and the latest loss, so a piped run is never silent for long and
 * its log stays readable. Given a line sink (a trainer's `log` option), the same plain lines go there.
 */
export type ProgressMode = "bar" | "lines" | "off" | { readonly lines: (line: string) => void };

/** Seconds between two lines in "lines" mode. */
export const LINE_INTERVAL_S = 5;

// Shared by every bar: consecutive phases keep one cadence instead of each starting its own.
let lastLineAt = 0;

export class ProgressBar {
  private done = 0;
  private readonly start = Date.now();
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly mode: ProgressMode | boolean,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  static enabledFor(verbose: boolean, stream: NodeJS.WriteStream = process.stderr): ProgressMode {
    if (!verbose) return "off";
    return stream.isTTY === true ? "bar" : "lines";
  }

  private get kind(): "bar" | "lines" | "off" {
    if (typeof this.mode === "object") return "lines";
    return this.mode === true ? "bar" : this.mode === false ? "off" : this.mode;
  }

  private writeLine(line: string): void {
    if (typeof this.mode === "object") this.mode.lines(line);
    else this.stream.write(`${line}\n`);
  }

  update(done: number, info = ""): void {
    this.done = done;
    const now = Date.now();
    if (this.kind === "lines") {
      if (now - lastLineAt < LINE_INTERVAL_S * 1000) return;
      lastLineAt = now;
      this.writeLine(this.line(now, info));
      return;
    }
    if (this.kind !== "bar") return;
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
    if (this.kind === "lines") {
      // the end of a phase that showed a line, or took long enough to deserve one
      const now = Date.now();
      if (now - this.start >= 1000 || lastLineAt >= this.start) {
        lastLineAt = now;
        this.writeLine(this.line(now, info, true));
      }
      return;
    }
    if (this.kind !== "bar") return;
    this.lastDraw = 0;
    this.update(this.total, info);
    this.stream.write("\n");
  }

  private line(now: number, info: string, finished = false): string {
    const done = finished ? this.total : this.done;
    const elapsed = (now - this.start) / 1000;
    const rate = elapsed > 0 ? done / elapsed : 0;
    const eta = done > 0 && !finished ? (elapsed / done) * (this.total - done) : 0;
    const timing = finished ? `done in ${fmt(elapsed)}` : `${rate.toFixed(rate >= 10 ? 0 : 2)}/s, ETA ${fmt(eta)}`;
    return `${this.label}: ${done}/${this.total} (${timing})${info ? ` ${info}` : ""}`;
  }
}

function fmt(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
