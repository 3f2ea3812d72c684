// readRunLock with real processes: a live pid counts as the lock's run only when it is that
// process (boot id and start time, where the lock records them), not a later one that got its pid.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readRunLock } from "../src/read/run-lock.js";

/** Boot id and start time (field 22 of /proc/<pid>/stat), read here independently of the code under test. */
function identity(pid: number): { boot_id: string; start_ticks: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return {
    boot_id: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
    start_ticks: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]),
  };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

describe("readRunLock", () => {
  it("a lock whose pid now belongs to a process started after it reads as not alive; the very process as alive", async () => {
    const child = spawn("sleep", ["60"], { stdio: "ignore" });
    children.push(child);
    const pid = child.pid!;
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-report-lock-")), "run.lock");
    const id = identity(pid);
    writeFileSync(file, JSON.stringify({ pid, host: hostname(), started: "then", ...id, start_ticks: id.start_ticks - 1 }));
    expect((await readRunLock(file))?.alive).toBe(false);
    writeFileSync(file, JSON.stringify({ pid, host: hostname(), started: "then", ...id }));
    expect((await readRunLock(file))?.alive).toBe(true);
    // an older lock without the identity: the pid alone, as before
    writeFileSync(file, JSON.stringify({ pid, host: hostname(), started: "then" }));
    expect((await readRunLock(file))?.alive).toBe(true);
  });
});
