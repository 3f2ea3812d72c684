/**
 * run.lock, as the trainers write it (`{"pid", "host", "started", "boot_id", "start_ticks", "command"}`),
 * and whether the process that took it is still alive (see core-tensor's process-identity.ts).
 */
import { promises as fs } from "node:fs";
import { hostname } from "node:os";
import { lockIdentity, lockOwnerState } from "@pbrl/core-tensor";
import type { LockInfo } from "../run-data.js";

export async function readRunLock(file: string): Promise<LockInfo | null> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch {
    return null; // no lock: no run holds the folder
  }
  let o: { pid?: unknown; host?: unknown; started?: unknown; boot_id?: unknown; start_ticks?: unknown } = {};
  try {
    o = JSON.parse(text) as typeof o;
  } catch {
    // half-written: its writer died between creating and writing it
  }
  const pid = typeof o.pid === "number" && Number.isInteger(o.pid) && o.pid > 0 ? o.pid : null;
  const host = typeof o.host === "string" ? o.host : null;
  const started = typeof o.started === "string" ? o.started : null;
  const identity = lockIdentity(o);
  // An unverified live pid counts as alive, as before identities were recorded.
  const alive =
    pid === null ? false : host !== null && host !== hostname() ? null : lockOwnerState({ pid, ...(identity !== undefined ? { identity } : {}) }) !== "gone";
  return { pid, host, started, alive };
}
