/**
 * Progress of hub transfers. Downloads usually start deep inside loadPretrained, so besides the
 * per-call callback there are process-wide listeners: the CLI registers a printer once.
 */

export interface HubProgress {
  direction: "download" | "upload";
  /** "org/name". */
  repo: string;
  /** The file's path in the repository. */
  file: string;
  /** Bytes of this file transferred so far (downloads: including bytes resumed from an earlier try). */
  bytes: number;
  /** The file's size, when the hub said it. */
  total: number | undefined;
  /** The file is complete (downloaded, or already in the cache; uploaded, or already on the hub). */
  done: boolean;
}

export type HubProgressListener = (progress: HubProgress) => void;

const listeners = new Set<HubProgressListener>();

/** Hears every hub transfer in this process; returns the function that stops it. */
export function onHubProgress(listener: HubProgressListener): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** Sends an event to the call's own callback and to the process-wide listeners; a listener that throws is ignored. */
export function emitProgress(event: HubProgress, own: HubProgressListener | undefined): void {
  for (const l of [own, ...listeners]) {
    if (l === undefined) continue;
    try {
      l(event);
    } catch {
      // Progress display must never break a transfer.
    }
  }
}

export function formatBytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

export interface ProgressPrinterOptions {
  /** A terminal: one line redrawn in place. Otherwise (logs, CI): a line every intervalMs. */
  isTTY: boolean;
  /** Between lines when not a terminal; default 5000. */
  intervalMs?: number;
  /** For tests. */
  now?: () => number;
}

interface RepoState {
  files: Map<string, { bytes: number; total: number | undefined; done: boolean }>;
  lastLine: number;
  printed: boolean;
  finished: boolean;
}

/**
 * A listener that writes progress for people: per repository, bytes and files done of the total,
 * at most one line every few seconds in a log, redrawn in place on a terminal, and one line when
 * every announced file is complete.
 */
export function hubProgressPrinter(write: (text: string) => void, options: ProgressPrinterOptions): HubProgressListener {
  const interval = options.isTTY ? 200 : (options.intervalMs ?? 5000);
  const now = options.now ?? Date.now;
  const repos = new Map<string, RepoState>();
  return (p) => {
    const key = `${p.direction} ${p.repo}`;
    let s = repos.get(key);
    if (s === undefined || s.finished) {
      s = { files: new Map(), lastLine: now(), printed: false, finished: false };
      repos.set(key, s);
    }
    s.files.set(p.file, { bytes: p.bytes, total: p.total, done: p.done });
    const files = [...s.files.values()];
    const bytes = files.reduce((a, f) => a + f.bytes, 0);
    const known = files.every((f) => f.total !== undefined);
    const total = files.reduce((a, f) => a + (f.total ?? 0), 0);
    const done = files.filter((f) => f.done).length;
    const verb = p.direction === "download" ? "downloading" : "uploading";
    const amount = known && total > 0 ? `${formatBytes(bytes)} of ${formatBytes(total)} (${Math.floor((100 * bytes) / total)}%)` : formatBytes(bytes);
    const line = `pbrl: ${verb} ${p.repo}: ${amount}, ${done} of ${files.length} files`;
    if (done === files.length) {
      s.finished = true;
      const past = p.direction === "download" ? "downloaded" : "uploaded";
      write(`${options.isTTY && s.printed ? "\r\x1b[2K" : ""}pbrl: ${past} ${p.repo}: ${formatBytes(bytes)} in ${files.length} files\n`);
      return;
    }
    if (now() - s.lastLine < interval) return;
    s.lastLine = now();
    s.printed = true;
    write(options.isTTY ? `\r\x1b[2K${line}` : `${line}\n`);
  };
}
