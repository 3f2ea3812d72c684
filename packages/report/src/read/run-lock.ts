/**
 * run.lock, as the trainers write it (`{"pid", "host", "started"}`), and whether its process is
 * still alive: the one fact that tells a running run from a stopped one.
 */
import { promises as fs } from "node:fs";
import { hostname } from "node:os";
import type { LockInfo } from "../run-data.js";

/** Whether process `pid` runs on this host (the trainers' run lock asks the same). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export async function readRunLock(file: string): Promise<LockInfo | null> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch {
    return null; // no lock: no run holds the folder
  }
  let o: { pid?: unknown; host?: unknown; started?: unknown } = {};
  try {
    o = JSON.parse(text) as typeof o;
  } catch {
    // half-written: its writer died between creating and writing it
  }
  const pid = typeof o.pid === "number" && Number.isInteger(o.pid) && o.pid > 0 ? o.pid : null;
  const host = typeof o.host === "string" ? o.host : null;
  const started = typeof o.started === "string" ? o.started : null;
  const alive = pid === null ? false : host !== null && host !== hostname() ? null : isProcessAlive(pid);
  return { pid, host, started, alive };
}
