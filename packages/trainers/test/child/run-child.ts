// Starts test/child/iterative-run.run.ts as its own process (for the kill-and-resume tests).
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";

const PKG = path.resolve(import.meta.dirname, "../..");
const VITEST = path.resolve(PKG, "node_modules/vitest/vitest.mjs");

export interface ChildRun {
  child: ChildProcess;
  /** Everything the child printed so far. */
  stdout: () => string;
  /** Called with the output so far whenever the child prints. */
  onOutput: (listener: (stdout: string) => void) => void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

export function startChild(trainer: string, out: string, resume: boolean, env: Record<string, string> = {}): ChildRun {
  const child = spawn(process.execPath, [VITEST, "run", "--config", "vitest.child.config.ts"], {
    cwd: PKG,
    env: { ...process.env, PBRL_TEST_OUT: out, PBRL_TEST_RESUME: resume ? "1" : "0", PBRL_TEST_TRAINER: trainer, PBRL_BACKEND: "wasm", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const listeners: ((s: string) => void)[] = [];
  child.stdout!.on("data", (d: Buffer) => {
    stdout += d.toString();
    for (const l of listeners) l(stdout);
  });
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, stdout: () => stdout, onOutput: (l) => listeners.push(l), exited };
}

/** Runs the child to the end; rejects unless it exits 0. */
export async function runChild(trainer: string, out: string, resume: boolean, env: Record<string, string> = {}): Promise<{ stdout: string }> {
  const r = await startChild(trainer, out, resume, env).exited;
  if (r.code !== 0) throw new Error(`child failed (${r.code ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}
