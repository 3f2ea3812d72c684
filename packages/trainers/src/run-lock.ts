/**
 * One run at a time per output_dir: `run.lock` is created exclusively (O_EXCL) and holds the
 * owner's pid and host, and where Linux's /proc is readable its boot id, start time and command.
 * A lock whose process is gone (a run killed with SIGKILL) is taken over, and so is one whose pid
 * now belongs to a process started later in the same boot (the pid was reused: after a container
 * restart it can even be this process's own). A live owner, one from another host, and a live pid
 * pbrl cannot tell from the owner (an older lock, another boot, no /proc) stop the new run with
 * what pbrl knows of that process and how to clear the lock.
 */
import { closeSync, openSync, readFileSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import * as path from "node:path";
import { isProcessAlive, lockIdentity, lockOwnerState, processCommand, processIdentity, type ProcessIdentity } from "@pbrl/core-tensor";

export const LOCK_FILE = "run.lock";

export class RunLockError extends Error {
  override name = "RunLockError";
}

interface LockOwner {
  pid: number;
  host: string;
  started: string;
  identity?: ProcessIdentity;
  command?: string;
}

function readOwner(file: string): LockOwner | undefined {
  let o: (Partial<LockOwner> & { boot_id?: unknown; start_ticks?: unknown; command?: unknown }) | null;
  // Stryker disable BlockStatement: an empty catch leaves o undefined, which the check below reads as unreadable too
  try {
    o = JSON.parse(readFileSync(file, "utf8")) as typeof o;
  } catch {
    return undefined; // unreadable or half-written: its writer died between create and write
  }
  // Stryker restore BlockStatement
  // A lock holding JSON that is no object (null, a number) is as unreadable.
  if (!(o instanceof Object) || typeof o.pid !== "number" || typeof o.host !== "string") return undefined;
  const identity = lockIdentity(o);
  return {
    pid: o.pid,
    host: o.host,
    started: String(o.started ?? "?"),
    // Stryker disable next-line ConditionalExpression: identity: undefined reads as no identity, every use compares it with undefined
    ...(identity !== undefined ? { identity } : {}),
    ...(typeof o.command === "string" ? { command: o.command } : {}),
  };
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
    const { identity, ...rest } = owner;
    writeSync(fd, JSON.stringify({ ...rest, ...identity }) + "\n");
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Why a live pid may not be the lock's owner, and what the user can check. */
function unverifiedReason(owner: LockOwner, me: LockOwner, proc: string): string {
  const command = processCommand(owner.pid, proc);
  const now = command !== undefined ? `pid ${owner.pid} is now running \`${command}\`` : `a process with pid ${owner.pid} is running`;
  if (me.identity === undefined)
    return `${now}, and pbrl cannot check whether it is that run: ${proc} cannot be read on this system, so only the pid was compared`;
  if (owner.identity === undefined)
    return `${now}, and pbrl cannot check whether it is that run: the lock records no start time (an older pbrl wrote it)${owner.command !== undefined ? `; the run's command was \`${owner.command}\`` : ""}`;
  return `${now}, but the lock was taken before this machine last started (boot ${owner.identity.boot_id}), or on another machine named ${owner.host}`;
}

/**
 * Takes `<dir>/run.lock` for this process; returns the function that gives it back. `dir` must
 * exist. Throws RunLockError when another live run holds it, or a live process pbrl cannot tell
 * from that run. `proc` is where procfs is mounted.
 */
export function acquireRunLock(dir: string, log: (line: string) => void = () => {}, proc = "/proc"): () => void {
  const file = path.join(dir, LOCK_FILE);
  const identity = processIdentity(process.pid, proc);
  const command = processCommand(process.pid, proc);
  const me: LockOwner = {
    pid: process.pid,
    host: hostname(),
    started: new Date().toISOString(),
    // Stryker disable next-line ConditionalExpression: identity: undefined reads as no identity (every use compares it with undefined) and spreads no key into the lock file
    ...(identity !== undefined ? { identity } : {}),
    // Stryker disable next-line ConditionalExpression: command: undefined is left out of the lock file by JSON.stringify, as an absent one
    ...(command !== undefined ? { command } : {}),
  };
  // Stryker disable next-line EqualityOperator,UpdateOperator: a third try is reached only when other processes re-create run.lock between this loop's unlink and its next create, a race no test can stage; alone, every path returns or throws by the second
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(file, me)) {
      // A second Ctrl-C exits at once (process.exit): the lock goes with the process, not left behind.
      const onExit = () => releaseRunLock(file, me);
      process.once("exit", onExit);
      return () => {
        process.off("exit", onExit);
        releaseRunLock(file, me);
      };
    }
    const owner = readOwner(file);
    if (owner !== undefined && owner.host !== me.host) {
      throw new RunLockError(
        `${dir} is locked by a pbrl run on host ${owner.host} (pid ${owner.pid}, started ${owner.started}); wait for it to finish, or choose another output_dir. If no run is using the folder any more, delete ${file}`,
      );
    }
    if (owner !== undefined) {
      const state = lockOwnerState(owner, proc);
      if (state === "alive" && owner.pid === process.pid) {
        throw new RunLockError(`${dir} is already in use by another run in this process (pid ${owner.pid}); give each run its own output_dir`);
      }
      if (state === "alive") {
        throw new RunLockError(
          `${dir} is in use by another pbrl run (pid ${owner.pid}, started ${owner.started}${owner.command !== undefined ? `, \`${owner.command}\`` : ""}); two runs writing one output_dir would mix their metrics and checkpoints. Wait for it to finish, or choose another output_dir`,
        );
      }
      if (state === "unverified") {
        throw new RunLockError(
          `${file} names pid ${owner.pid}${owner.pid === process.pid ? " (this process's own pid)" : ""}, the pbrl run that took it at ${owner.started}; ${unverifiedReason(owner, me, proc)}. If no pbrl run is using ${dir} (the lock was left by a run that stopped, e.g. before a restart), delete ${file} and start again; otherwise wait for that run, or choose another output_dir`,
        );
      }
    }
    const why =
      owner === undefined
        ? "is unreadable (its run stopped while creating it)"
        : isProcessAlive(owner.pid)
          ? `names pid ${owner.pid}, which now belongs to a process started after that run (the run is gone and its pid was reused${owner.pid === process.pid ? ", by this process after a restart" : ""})`
          : `was left by a run that is no longer running (pid ${owner.pid})`;
    log(`pbrl: ${file} ${why}; taking it over`);
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  // Stryker disable next-line StringLiteral,CallExpression: reached only in that race (see the loop)
  throw new RunLockError(`could not take ${file}: other processes keep creating it; is another run starting in ${dir}?`);
}

function releaseRunLock(file: string, me: LockOwner): void {
  // Only our own lock: a run that took over a lock we lost must keep it.
  const owner = readOwner(file);
  if (owner?.pid !== me.pid || owner.identity?.start_ticks !== me.identity?.start_ticks) return;
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: force matters only when run.lock vanishes between the read above and this removal, a race of another process that no test can stage
  rmSync(file, { force: true }); // gone already: nothing to give back
}
