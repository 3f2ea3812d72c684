// The exit codes of a real `pbrl` process (docs/errors.md): 0 done, 2 bad input, 130 stopped by
// a signal, 1 anything else; and a reward module busy in its worker thread never keeps Ctrl-C
// from working or the process from exiting.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileCli, packagesBuilt } from "./compiled-cli.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  err: string;
  out: string;
  ms: number;
}

/** Runs the CLI; `onErr` sees stderr as it grows and may signal the child. */
function pbrl(main: string, args: string[], o: { cwd?: string; onErr?: (err: string, kill: (s: NodeJS.Signals) => void) => void } = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const child = spawn(process.execPath, [main, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      cwd: o.cwd ?? process.cwd(),
      env: { ...process.env, PBRL_BACKEND: "wasm" },
    });
    let err = "";
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      o.onErr?.(err, (s) => child.kill(s));
    });
    // A child that ignores signals (a reward blocking its only thread) must not outlive the test.
    const guard = setTimeout(() => child.kill("SIGKILL"), 50_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, err, out, ms: Date.now() - start });
    });
  });
}

function project(reward: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-exit-"));
  writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink", "A bird"].map((prompt) => JSON.stringify({ prompt })).join("\n"));
  writeFileSync(path.join(dir, "reward.mjs"), reward);
  return dir;
}
const REWARD = "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).split('e').length);\n";
const runArgs = (dir: string, ...extra: string[]) => [
  "train",
  `agent_model=${TINY}`,
  `train_dataset=${path.join(dir, "train.jsonl")}`,
  `reward_func=${path.join(dir, "reward.mjs")}`,
  `output_dir=${path.join(dir, "out")}`,
  "preference_num_candidates=2",
  "max_new_tokens=3",
  ...extra,
];

describe.skipIf(!packagesBuilt)("exit codes of a real pbrl process", () => {
  let main = "";
  let cleanup = (): void => {};
  beforeAll(async () => {
    ({ main, cleanup } = await compileCli());
  }, 300_000);
  afterAll(() => cleanup());

  it("0: a finished run (with a reward module in its worker thread, which does not keep the process up)", async () => {
    const r = await pbrl(main, runArgs(project(REWARD), "num_train_epochs=1", "verbose=false"));
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/preference pairs, \d+ updates/);
  }, 120_000);

  it("2: a bad config, before anything runs", async () => {
    const r = await pbrl(main, runArgs(project(REWARD), "dpo_beta=0"));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/dpo_beta: got 0/);
  }, 60_000);

  it("130: a run stopped by SIGINT after the round in progress (resumable)", async () => {
    const dir = project(REWARD);
    let sent = false;
    const r = await pbrl(main, runArgs(dir, "trainer=madpo_iter", "num_iterations=4"), {
      onErr: (err, kill) => {
        if (!sent && /pbrl: round 1: /.test(err)) {
          sent = true;
          kill("SIGINT");
        }
      },
    });
    expect(r.code, r.err).toBe(130);
    expect(r.err).toMatch(/SIGINT received; finishing round and checkpoint, then stopping/);
    expect(r.out).toMatch(/stopped after round \d \(resume with resume_from_checkpoint=true\)/);
  }, 120_000);

  it("130 at once: a second SIGINT while the reward module is busy in its worker thread", async () => {
    const dir = project("export const reward_func = () => { process.stderr.write('reward busy\\n'); for (;;) {} };\n");
    let first = 0;
    const r = await pbrl(main, runArgs(dir, "trainer=madpo_iter", "num_iterations=2"), {
      onErr: (err, kill) => {
        if (first === 0 && /reward busy/.test(err)) {
          first = Date.now();
          kill("SIGINT");
        } else if (first > 0 && /SIGINT received/.test(err)) {
          first = -1;
          kill("SIGINT");
        }
      },
    });
    expect(r.code, r.err).toBe(130);
    expect(r.signal).toBe(null);
    expect(r.err).toMatch(/SIGINT received; finishing round and checkpoint, then stopping \(send it again to exit at once\)/);
  }, 60_000);

  it("1: anything else (a run whose training diverged)", async () => {
    const lengths = project("export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).length);\n");
    const r = await pbrl(
      main,
      runArgs(lengths, "preference_num_candidates=4", "agent_learning_rate=1e30", "train_batch_size=1", "num_train_epochs=2", "verbose=false"),
    );
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(/NonFiniteError: .*non-finite/);
    expect(r.err).toMatch(/not an input error \(exit code 1\); PBRL_DEBUG=1 prints where it happened/);
  }, 120_000);

  it("2: a write the machine refuses (here a file-size limit, ulimit -f) names the file and what to do", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-exit-efbig-"));
    const out = path.join(dir, "converted");
    // tiny-llama's weights are 445 KB: past the 256 KiB limit
    const child = spawn("bash", ["-c", 'ulimit -f 256 && exec "$0" "$@"', process.execPath, main, "convert", "--model", TINY, "--out", out], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PBRL_BACKEND: "wasm" },
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code, err).toBe(2);
    expect(err).toMatch(
      /pbrl convert: FileWriteError: cannot write \S+\/model\.safetensors: the file would be larger than this process may write \(EFBIG: the shell's file-size limit, ulimit -f, or the filesystem's largest file\); raise the limit, or choose an output folder on another filesystem \(output_dir, --out\)\n/,
    );
    expect(err).not.toMatch(/not an input error/);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it("2: convert --out . (the current folder), leaving no temporary folder", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "pbrl-exit-cwd-"));
    const r = await pbrl(main, ["convert", "--model", TINY, "--out", "."], { cwd });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /--out \. is the current directory, which pbrl convert does not replace\. Choose a new or empty folder for --out, e\.g\. --out converted/,
    );
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(path.dirname(cwd)).filter((f) => f.startsWith(`.${path.basename(cwd)}`))).toEqual([]);
  }, 60_000);
});
