/**
 * One run at a time per output_dir: `run.lock` is created exclusively (O_EXCL) and holds the
 * owner's pid and host. A lock whose process is gone (a run killed with SIGKILL) is taken over;
 * a live one, or one from another host that pbrl cannot check, stops the new run.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import * as path from "node:path";
import { isProcessAlive } from "@pbrl/report";

export const LOCK_FILE = "run.lock";

export class RunLockError extends Error {
  override name = "RunLockError";
}

interface LockOwner {
  pid: number;
  host: string;
  started: string;
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const o = JSON.parse(readFileSync(file, "utf8")) as Partial<LockOwner>;
    return typeof o.pid === "number" && typeof o.host === "string" ? { pid: o.pid, host: o.host, started: String(o.started ?? "?") } : undefined;
  } catch {
    return undefined; // unreadable or half-written: its writer died between create and write
  }
}

function tryCreate(file: string, owner: LockOwner): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(owner) + "\n");
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes `<dir>/run.lock` for this process; returns the function that gives it back. `dir` must
 * exist. Throws RunLockError when another live run holds it.
 */
export function acquireRunLock(dir: string, log: (line: string) => void = () => {}): () => void {
  const file = path.join(dir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), started: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(file, me)) return () => releaseRunLock(file, me.pid);
    const owner = readOwner(file);
    if (owner !== undefined && owner.pid === process.pid && owner.host === me.host) {
      throw new RunLockError(`${dir} is already in use by another run in this process (pid ${owner.pid}); give each run its own output_dir`);
    }
    if (owner !== undefined && owner.host !== me.host) {
      throw new RunLockError(
        `${dir} is locked by a pbrl run on host ${owner.host} (pid ${owner.pid}, started ${owner.started}); wait for it to finish, or choose another output_dir. If no run is using the folder any more, delete ${file}`,
      );
    }
    if (owner !== undefined && isProcessAlive(owner.pid)) {
      throw new RunLockError(
        `${dir} is in use by another pbrl run (pid ${owner.pid}, started ${owner.started}); two runs writing one output_dir would mix their metrics and checkpoints. Wait for it to finish, or choose another output_dir`,
      );
    }
    log(`pbrl: ${file} was left by a run that is no longer running (pid ${owner?.pid ?? "unknown"}); taking it over`);
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  throw new RunLockError(`could not take ${file}: other processes keep creating it; is another run starting in ${dir}?`);
}

function releaseRunLock(file: string, pid: number): void {
  // Only our own lock: a run that took over a lock we lost must keep it.
  if (readOwner(file)?.pid !== pid) return;
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}
