// The run lock with real processes: a live owner stops a second run; a dead one, or a pid that now
// belongs to another process (reused: even this process's own after a restart), is taken over;
// a live pid pbrl cannot tell from the owner is named, with its command and how to clear the lock.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquireRunLock, RunLockError } from "../src/run-lock.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-lock-"));
const deadPid = () => Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString());
const lockOf = (dir: string) => JSON.parse(readFileSync(path.join(dir, "run.lock"), "utf8")) as Record<string, unknown>;
const writeLock = (dir: string, o: Record<string, unknown>) =>
  writeFileSync(path.join(dir, "run.lock"), JSON.stringify({ host: hostname(), started: "2020-01-01T00:00:00.000Z", ...o }));

/** Boot id and start time (field 22 of /proc/<pid>/stat), read here independently of the code under test. */
function processIdentity(pid: number): { boot_id: string; start_ticks: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return {
    boot_id: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
    start_ticks: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]),
  };
}

const children: ChildProcess[] = [];
/** A live process that is not pbrl: `sleep 60`. */
function sleeper(): number {
  const c = spawn("sleep", ["60"], { stdio: "ignore" });
  children.push(c);
  return c.pid!;
}
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

describe("run lock", () => {
  it("records the owner's boot id, start time and command where /proc is readable", () => {
    const d = tmp();
    const release = acquireRunLock(d);
    const lock = lockOf(d);
    expect(lock["pid"]).toBe(process.pid);
    expect(lock["boot_id"]).toBe(readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
    expect(lock["start_ticks"]).toBe(processIdentity(process.pid).start_ticks);
    expect(String(lock["command"])).toContain("node");
    // program and first argument only: the rest may hold secrets passed as key=value
    expect(String(lock["command"])).not.toMatch(/run-lock\.test\.ts/);
    release();
  });

  it("a second run of this process, or a live pbrl run elsewhere, is refused; a dead process's lock is taken over", () => {
    const d = tmp();
    const release = acquireRunLock(d);
    expect(() => acquireRunLock(d)).toThrow(/already in use by another run in this process/);
    release();
    // a live process whose identity the lock records: that run still holds the folder
    const pid = sleeper();
    writeLock(d, { pid, ...processIdentity(pid), command: "pbrl train" });
    expect(() => acquireRunLock(d)).toThrow(
      new RegExp(`in use by another pbrl run \\(pid ${pid}, started 2020-01-01T00:00:00.000Z, \`pbrl train\`\\).*another output_dir`),
    );
    writeLock(d, { pid: deadPid() });
    const lines: string[] = [];
    const again = acquireRunLock(d, (l) => lines.push(l));
    expect(lines.join("\n")).toMatch(/no longer running.*taking it over/);
    expect(lockOf(d)["pid"]).toBe(process.pid);
    again();
    writeLock(d, { pid: 1, host: "elsewhere" });
    expect(() => acquireRunLock(d)).toThrow(/on host elsewhere.*delete .*run\.lock/);
  });

  it("a live pid that is another process than the lock's (started later in this boot) is taken over", () => {
    const d = tmp();
    const pid = sleeper();
    const now = processIdentity(pid);
    writeLock(d, { pid, boot_id: now.boot_id, start_ticks: now.start_ticks - 1, command: "pbrl train run.yaml" });
    const lines: string[] = [];
    const release = acquireRunLock(d, (l) => lines.push(l));
    expect(lines.join("\n")).toMatch(new RegExp(`names pid ${pid}, which now belongs to a process started after that run .*pid was reused.*taking it over`));
    expect(lockOf(d)["pid"]).toBe(process.pid);
    release();
  });

  it("this process's own pid, left in the lock by a run before a container restart, is taken over", () => {
    const d = tmp();
    const me = processIdentity(process.pid);
    writeLock(d, { pid: process.pid, boot_id: me.boot_id, start_ticks: me.start_ticks - 100 });
    const lines: string[] = [];
    const release = acquireRunLock(d, (l) => lines.push(l));
    expect(lines.join("\n")).toMatch(/by this process after a restart.*taking it over/);
    release();
  });

  it("a live pid pbrl cannot tell from the owner (an older lock, another boot) is named with its command and how to clear the lock", () => {
    const d = tmp();
    const pid = sleeper();
    const file = path.join(d, "run.lock");
    writeLock(d, { pid });
    const older = new RegExp(
      `${file} names pid ${pid}.*pid ${pid} is now running \`sleep 60\`, and pbrl cannot check whether it is that run: the lock records no start time.*delete ${file} and start again`,
    );
    expect(() => acquireRunLock(d)).toThrow(older);
    writeLock(d, { pid, boot_id: "another-boot", start_ticks: 5 });
    expect(() => acquireRunLock(d)).toThrow(/before this machine last started \(boot another-boot\).*delete .*run\.lock/);
    writeLock(d, { pid: process.pid });
    expect(() => acquireRunLock(d)).toThrow(/names pid \d+ \(this process's own pid\).*records no start time.*delete/);
    expect(() => acquireRunLock(d)).toThrow(RunLockError);
  });

  it("where /proc is missing, only the pid is compared, and the message says so", () => {
    const d = tmp();
    const noProc = path.join(d, "no-proc");
    const release = acquireRunLock(d, () => {}, noProc);
    expect(lockOf(d)["start_ticks"]).toBeUndefined();
    release();
    const pid = sleeper();
    writeLock(d, { pid, ...processIdentity(pid) });
    expect(() => acquireRunLock(d, () => {}, noProc)).toThrow(
      /a process with pid \d+ is running, and pbrl cannot check whether it is that run: .*no-proc cannot be read on this system, so only the pid was compared.*delete/,
    );
  });
});
