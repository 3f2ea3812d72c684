// output_dir decisions and the run lock, on real folders.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openRunDir, planRunDir, RunDirError, type RunDirOptions } from "../src/run-dir.js";
import { acquireRunLock, RunLockError } from "../src/run-lock.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-rundir-"));
const opts = (outputDir: string, more: Partial<RunDirOptions> = {}): RunDirOptions => ({
  outputDir,
  checkpointsDir: path.join(outputDir, "checkpoints"),
  resumeLatest: false,
  overwrite: false,
  trainer: "madpo_iter",
  ...more,
});

/** A finished-looking run: config, metrics, a checkpoint and saved agents, and one file of the user's. */
function finishedRun(dir: string): void {
  mkdirSync(path.join(dir, "checkpoints", "round_0004"), { recursive: true });
  mkdirSync(path.join(dir, "agents", "agent_0"), { recursive: true });
  writeFileSync(path.join(dir, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
  writeFileSync(path.join(dir, "metrics.jsonl"), "{}\n");
  writeFileSync(path.join(dir, "checkpoints", "latest.json"), JSON.stringify({ round: 4, dir: "round_0004" }));
  writeFileSync(path.join(dir, "notes.txt"), "mine");
}

const deadPid = () => spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();

describe("planRunDir (reads only)", () => {
  it("a fresh run into a folder holding a finished run is refused, naming its files and the three ways out", () => {
    const d = tmp();
    finishedRun(d);
    expect(() => planRunDir(opts(d))).toThrow(RunDirError);
    expect(() => planRunDir(opts(d))).toThrow(
      /already holds a run's results \(config\.json, metrics\.jsonl, agents, checkpoints\).*resume_from_checkpoint=true.*another output_dir.*overwrite_output_dir=true/,
    );
    expect(
      planRunDir(opts(d, { overwrite: true }))
        .replace.map((p) => path.basename(p))
        .sort(),
    ).toEqual(["agents", "checkpoints", "config.json", "metrics.jsonl"]);
    expect(planRunDir(opts(d, { resumeLatest: true }))).toEqual({ resume: true, replace: [] });
  });

  it("a run that completed no round is started again in place; another trainer's is not", () => {
    const d = tmp();
    writeFileSync(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    writeFileSync(path.join(d, "metrics.jsonl"), "");
    expect(planRunDir(opts(d)).replace.length).toBe(2);
    expect(planRunDir(opts(d, { resumeLatest: true })).resume).toBe(false);
    expect(() => planRunDir(opts(d, { trainer: "marlhf_iter" }))).toThrow(RunDirError);
    expect(() => planRunDir(opts(d, { trainer: "marlhf_iter", resumeLatest: true }))).toThrow(/a madpo_iter run, not a marlhf_iter run/);
  });

  it("an output_dir that is a file, and resume of an empty folder, are errors", () => {
    const d = tmp();
    const f = path.join(d, "file");
    writeFileSync(f, "x");
    expect(() => planRunDir(opts(f))).toThrow(/is a file, not a folder/);
    expect(() => planRunDir(opts(d, { resumeLatest: true }))).toThrow(/holds no run to resume/);
    expect(planRunDir(opts(path.join(d, "new")))).toEqual({ resume: false, replace: [] });
  });
});

describe("openRunDir", () => {
  it("replaces only the earlier run's outputs, removes killed runs' temporaries, and leaves the user's files", () => {
    const d = tmp();
    finishedRun(d);
    const stale = path.join(d, "checkpoints", `.round_0005.tmp-${deadPid()}-0123abcd`);
    mkdirSync(stale);
    const o = opts(d, { overwrite: true });
    const release = openRunDir(o, planRunDir(o));
    expect(readdirSync(d).sort()).toEqual(["notes.txt", "run.lock"]);
    expect(readFileSync(path.join(d, "notes.txt"), "utf8")).toBe("mine");
    release();
    expect(existsSync(path.join(d, "run.lock"))).toBe(false);
  });

  it("on resume, keeps everything but the temporaries of killed writes", () => {
    const d = tmp();
    finishedRun(d);
    const dead = deadPid();
    writeFileSync(path.join(d, `.metrics.jsonl.tmp-${dead}-0123abcd`), "half");
    mkdirSync(path.join(d, "checkpoints", `.round_0003.old-${dead}-89abcdef`));
    const o = opts(d, { resumeLatest: true });
    const release = openRunDir(o, planRunDir(o));
    release();
    expect(readdirSync(d).sort()).toEqual(["agents", "checkpoints", "config.json", "metrics.jsonl", "notes.txt"]);
    expect(readdirSync(path.join(d, "checkpoints")).sort()).toEqual(["latest.json", "round_0004"]);
  });
});

describe("run lock", () => {
  it("a second run of this process, or of a live process, is refused; a dead process's lock is taken over", () => {
    const d = tmp();
    const release = acquireRunLock(d);
    expect(() => acquireRunLock(d)).toThrow(RunLockError);
    release();
    // a live other process (this test's parent) holds it
    writeFileSync(path.join(d, "run.lock"), JSON.stringify({ pid: process.ppid, host: hostname(), started: "then" }));
    expect(() => acquireRunLock(d)).toThrow(new RegExp(`in use by another pbrl run \\(pid ${process.ppid}, started then\\).*another output_dir`));
    writeFileSync(path.join(d, "run.lock"), JSON.stringify({ pid: Number(deadPid()), host: hostname(), started: "then" }));
    const lines: string[] = [];
    const again = acquireRunLock(d, (l) => lines.push(l));
    expect(lines.join("\n")).toMatch(/no longer running.*taking it over/);
    expect(JSON.parse(readFileSync(path.join(d, "run.lock"), "utf8")).pid).toBe(process.pid);
    again();
    writeFileSync(path.join(d, "run.lock"), JSON.stringify({ pid: 1, host: "elsewhere", started: "then" }));
    expect(() => acquireRunLock(d)).toThrow(/on host elsewhere.*delete .*run\.lock/);
  });
});
