// The run lock with real processes: a live owner stops a second run; a dead one, or a pid that now
// belongs to another process (reused: even this process's own after a restart), is taken over;
// a live pid pbrl cannot tell from the owner is named, with its command and how to clear the lock.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

describe("run lock messages, word for word", () => {
  const STARTED = "2020-01-01T00:00:00.000Z";
  const takeOver = (d: string, lock: Record<string, unknown> | string) => {
    if (typeof lock === "string") writeFileSync(path.join(d, "run.lock"), lock);
    else writeLock(d, lock);
    const lines: string[] = [];
    acquireRunLock(d, (l) => lines.push(l))();
    return lines;
  };
  const refusal = (d: string, proc?: string) => {
    try {
      acquireRunLock(d, () => {}, proc);
    } catch (err) {
      expect(err).toBeInstanceOf(RunLockError);
      expect((err as Error).name).toBe("RunLockError");
      return (err as Error).message;
    }
    throw new Error("expected a RunLockError");
  };

  it("the lock holds pid, host, start time, boot id, start ticks and command, and nothing else", () => {
    const d = tmp();
    const release = acquireRunLock(d);
    const text = readFileSync(path.join(d, "run.lock"), "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    const lock = JSON.parse(text);
    expect(Object.keys(lock).sort()).toEqual(["boot_id", "command", "host", "pid", "started", "start_ticks"].sort());
    expect(lock.host).toBe(hostname());
    expect(Date.parse(lock.started)).toBeGreaterThan(Date.now() - 60_000);
    expect(lock.started).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    release();
  });

  it("taking over: an unreadable lock, a dead owner, a reused pid, this process's own pid after a restart", () => {
    const file = (d: string) => path.join(d, "run.lock");
    const a = tmp();
    expect(takeOver(a, '{"pid": 12')).toEqual([`pbrl: ${file(a)} is unreadable (its run stopped while creating it); taking it over`]);
    // a lock without a numeric pid or a host is as unreadable
    expect(takeOver(a, JSON.stringify({ pid: "12", host: hostname() }))).toEqual([
      `pbrl: ${file(a)} is unreadable (its run stopped while creating it); taking it over`,
    ]);
    expect(takeOver(a, JSON.stringify({ pid: 12 }))).toEqual([`pbrl: ${file(a)} is unreadable (its run stopped while creating it); taking it over`]);
    // and so is JSON that is no object
    for (const text of ["null", "12"])
      expect(takeOver(a, text)).toEqual([`pbrl: ${file(a)} is unreadable (its run stopped while creating it); taking it over`]);
    const dead = deadPid();
    expect(takeOver(a, { pid: dead })).toEqual([`pbrl: ${file(a)} was left by a run that is no longer running (pid ${dead}); taking it over`]);
    const pid = sleeper();
    const now = processIdentity(pid);
    expect(takeOver(a, { pid, boot_id: now.boot_id, start_ticks: now.start_ticks - 1 })).toEqual([
      `pbrl: ${file(a)} names pid ${pid}, which now belongs to a process started after that run (the run is gone and its pid was reused); taking it over`,
    ]);
    const me = processIdentity(process.pid);
    expect(takeOver(a, { pid: process.pid, boot_id: me.boot_id, start_ticks: me.start_ticks - 1 })).toEqual([
      `pbrl: ${file(a)} names pid ${process.pid}, which now belongs to a process started after that run (the run is gone and its pid was reused, by this process after a restart); taking it over`,
    ]);
  });

  it("refusals: another host, this process, a live run with and without its command, a pid pbrl cannot check", () => {
    const d = tmp();
    const file = path.join(d, "run.lock");
    writeLock(d, { pid: 1, host: "elsewhere" });
    expect(refusal(d)).toBe(
      `${d} is locked by a pbrl run on host elsewhere (pid 1, started ${STARTED}); wait for it to finish, or choose another output_dir. If no run is using the folder any more, delete ${file}`,
    );
    writeFileSync(file, JSON.stringify({ pid: 1, host: "elsewhere" }));
    expect(refusal(d)).toBe(
      `${d} is locked by a pbrl run on host elsewhere (pid 1, started ?); wait for it to finish, or choose another output_dir. If no run is using the folder any more, delete ${file}`,
    );
    const release = acquireRunLock(tmp());
    release();
    writeFileSync(file, "");
    const own = acquireRunLock(d);
    expect(refusal(d)).toBe(`${d} is already in use by another run in this process (pid ${process.pid}); give each run its own output_dir`);
    own();
    const pid = sleeper();
    const id = processIdentity(pid);
    writeLock(d, { pid, ...id, command: "pbrl train" });
    expect(refusal(d)).toBe(
      `${d} is in use by another pbrl run (pid ${pid}, started ${STARTED}, \`pbrl train\`); two runs writing one output_dir would mix their metrics and checkpoints. Wait for it to finish, or choose another output_dir`,
    );
    writeLock(d, { pid, ...id });
    expect(refusal(d)).toBe(
      `${d} is in use by another pbrl run (pid ${pid}, started ${STARTED}); two runs writing one output_dir would mix their metrics and checkpoints. Wait for it to finish, or choose another output_dir`,
    );
    const clear = `If no pbrl run is using ${d} (the lock was left by a run that stopped, e.g. before a restart), delete ${file} and start again; otherwise wait for that run, or choose another output_dir`;
    writeLock(d, { pid, command: "pbrl train run.yaml" });
    expect(refusal(d)).toBe(
      `${file} names pid ${pid}, the pbrl run that took it at ${STARTED}; pid ${pid} is now running \`sleep 60\`, and pbrl cannot check whether it is that run: the lock records no start time (an older pbrl wrote it); the run's command was \`pbrl train run.yaml\`. ${clear}`,
    );
    writeLock(d, { pid });
    expect(refusal(d)).toBe(
      `${file} names pid ${pid}, the pbrl run that took it at ${STARTED}; pid ${pid} is now running \`sleep 60\`, and pbrl cannot check whether it is that run: the lock records no start time (an older pbrl wrote it). ${clear}`,
    );
    writeLock(d, { pid, boot_id: "another-boot", start_ticks: 5 });
    expect(refusal(d)).toBe(
      `${file} names pid ${pid}, the pbrl run that took it at ${STARTED}; pid ${pid} is now running \`sleep 60\`, but the lock was taken before this machine last started (boot another-boot), or on another machine named ${hostname()}. ${clear}`,
    );
    writeLock(d, { pid: process.pid });
    expect(refusal(d)).toBe(
      `${file} names pid ${process.pid} (this process's own pid), the pbrl run that took it at ${STARTED}; pid ${process.pid} is now running \`${lockOf(tmpLockDir())["command"]}\`, and pbrl cannot check whether it is that run: the lock records no start time (an older pbrl wrote it). ${clear}`,
    );
    const noProc = path.join(d, "no-proc");
    writeLock(d, { pid, ...id });
    expect(refusal(d, noProc)).toBe(
      `${file} names pid ${pid}, the pbrl run that took it at ${STARTED}; a process with pid ${pid} is running, and pbrl cannot check whether it is that run: ${noProc} cannot be read on this system, so only the pid was compared. ${clear}`,
    );
  });

  it("release removes only this run's own lock, and leaves no exit handler behind", () => {
    const d = tmp();
    const listeners = process.listenerCount("exit");
    const release = acquireRunLock(d);
    expect(process.listenerCount("exit")).toBe(listeners + 1);
    // another run took the lock over meanwhile (this one was thought dead): it keeps it
    const other = { pid: deadPid(), host: hostname(), started: "2020-01-01T00:00:00.000Z" };
    writeFileSync(path.join(d, "run.lock"), JSON.stringify(other));
    release();
    expect(process.listenerCount("exit")).toBe(listeners);
    expect(JSON.parse(readFileSync(path.join(d, "run.lock"), "utf8"))).toEqual(other);
    // the same pid with another start time is another process's lock too
    writeFileSync(path.join(d, "run.lock"), "");
    const again = acquireRunLock(d);
    const mine = lockOf(d);
    writeFileSync(path.join(d, "run.lock"), JSON.stringify({ ...mine, start_ticks: Number(mine["start_ticks"]) + 1 }));
    again();
    expect(lockOf(d)["start_ticks"]).toBe(Number(mine["start_ticks"]) + 1);
    // released twice, or after the lock is gone: nothing to do, no error
    writeFileSync(path.join(d, "run.lock"), "");
    const third = acquireRunLock(d);
    third();
    expect(() => third()).not.toThrow();
  });
});

describe("run lock, what the code around the messages does", () => {
  it("the exit handler, which runs when the process exits without giving the lock back, removes it", () => {
    const d = tmp();
    const before = process.listeners("exit");
    acquireRunLock(d);
    const added = process.listeners("exit").filter((l) => !before.includes(l));
    expect(added).toHaveLength(1);
    (added[0] as (code: number) => void)(0);
    expect(existsSync(path.join(d, "run.lock"))).toBe(false);
    process.off("exit", added[0] as (code: number) => void);
  });

  it("a lock that is a folder cannot be taken over: the error of removing it is thrown, not retried", () => {
    const d = tmp();
    mkdirSync(path.join(d, "run.lock"));
    expect(() => acquireRunLock(d, () => {})).toThrow(/EISDIR|EPERM/);
    // a missing folder is the caller's mistake, said as the file system says it
    expect(() => acquireRunLock(path.join(d, "missing"))).toThrow(/ENOENT/);
  });

  it("a lock that another process removes while this one takes it over is taken all the same", () => {
    const d = tmp();
    const file = path.join(d, "run.lock");
    writeLock(d, { pid: deadPid() });
    const lines: string[] = [];
    // the log line comes just before the removal: the stale lock is gone by then
    const release = acquireRunLock(d, (line) => {
      lines.push(line);
      rmSync(file);
    });
    expect(lines).toHaveLength(1);
    expect(lockOf(d)["pid"]).toBe(process.pid);
    release();
    expect(existsSync(file)).toBe(false);
  });

  it("an older lock's command that is not a string is not quoted", () => {
    const d = tmp();
    const pid = sleeper();
    writeLock(d, { pid, command: 5 });
    expect(() => acquireRunLock(d)).toThrow(/the lock records no start time \(an older pbrl wrote it\)\. If no pbrl run/);
  });

  it("taking and giving back the lock leaves no file descriptor open", () => {
    const d = tmp();
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 5; i++) acquireRunLock(d)();
    expect(fds()).toBe(before);
  });
});

/** A folder with this process's lock taken and given back, to read the command pbrl records for it. */
function tmpLockDir(): string {
  const d = tmp();
  const release = acquireRunLock(d);
  const copy = readFileSync(path.join(d, "run.lock"), "utf8");
  release();
  writeFileSync(path.join(d, "run.lock"), copy);
  return d;
}
