/**
 * Whether the process a run lock names is still alive: the one fact that tells a running run
 * from a stopped one. A pid alone is not enough: after a restart (of the container, or the
 * machine) the same pid can belong to another process, even to the next pbrl run itself. Where
 * Linux's /proc is readable, a lock records the kernel's boot id and the process's start time,
 * which together name one process for good. The trainers write the lock, the report reads it.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";

/** Whether process `pid` runs on this host. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A process for good: the boot it runs in and its start time (clock ticks since that boot). */
export interface ProcessIdentity {
  boot_id: string;
  start_ticks: number;
}

const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/** Process `pid`'s identity from /proc (`proc`: where procfs is mounted); undefined where it cannot be read (no /proc, or the process is gone). */
export function processIdentity(pid: number, proc = "/proc"): ProcessIdentity | undefined {
  const bootId = readText(path.join(proc, "sys", "kernel", "random", "boot_id"))?.trim();
  const stat = readText(path.join(proc, String(pid), "stat"));
  if (bootId === undefined || bootId === "" || stat === undefined) return undefined;
  // Field 2 (the command name) is in parentheses and may hold spaces or ")": fields 3… follow the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const startTicks = Number(fields[22 - 3]);
  return Number.isSafeInteger(startTicks) ? { boot_id: bootId, start_ticks: startTicks } : undefined;
}

/**
 * Process `pid`'s program and first argument from /proc (`node /usr/bin/pbrl`, `sleep 60`), for
 * messages and the lock; undefined where it cannot be read. The rest of the command line is left
 * out: it may hold secrets (key=value overrides), and the lock and messages end up in logs.
 */
export function processCommand(pid: number, proc = "/proc"): string | undefined {
  const text = readText(path.join(proc, String(pid), "cmdline"));
  if (text === undefined || text === "") return undefined;
  const cmd = text.replace(/\0+$/, "").split("\0").slice(0, 2).join(" ");
  return cmd.length > 160 ? `${cmd.slice(0, 157)}…` : cmd;
}

/**
 * What became of the process a lock on this host names: "alive" (that very process still runs),
 * "gone" (no process has its pid, or the pid now belongs to a process started later in the same
 * boot), or "unverified" (a process has its pid, but the lock records no identity, it was taken
 * in another boot, or /proc cannot be read: it may or may not be the lock's process).
 */
export function lockOwnerState(owner: { pid: number; identity?: ProcessIdentity }, proc = "/proc"): "alive" | "gone" | "unverified" {
  if (!isProcessAlive(owner.pid)) return "gone";
  const now = processIdentity(owner.pid, proc);
  if (owner.identity === undefined || now === undefined || now.boot_id !== owner.identity.boot_id) return "unverified";
  return now.start_ticks === owner.identity.start_ticks ? "alive" : "gone";
}

/** The identity a lock records, if it records a valid one. */
export function lockIdentity(o: { boot_id?: unknown; start_ticks?: unknown }): ProcessIdentity | undefined {
  return typeof o.boot_id === "string" && o.boot_id !== "" && typeof o.start_ticks === "number" && Number.isSafeInteger(o.start_ticks)
    ? { boot_id: o.boot_id, start_ticks: o.start_ticks }
    : undefined;
}
