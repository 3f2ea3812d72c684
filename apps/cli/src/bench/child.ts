import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { CliIO } from "../io.js";

/**
 * The CLI as compiled JavaScript (dist/main.js), which the bench starts as child processes (a
 * backend's worker, `pbrl train` runs). From the TypeScript sources (vitest imports src/
 * directly) there is no JavaScript entry that matches the code being tested — Node cannot run
 * src/main.ts, and dist/ may be stale — so undefined.
 */
export function compiledCliEntry(): string | undefined {
  const self = fileURLToPath(import.meta.url);
  if (!self.endsWith(".js")) return undefined;
  const entry = path.join(path.dirname(self), "..", "main.js");
  return existsSync(entry) ? entry : undefined;
}

/** Spawns a process (with `env` added to this one's), forwards its stderr line by line to io.err, collects stdout. */
export function runChild(
  command: string,
  args: string[],
  io: CliIO,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => void (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      const lines = (partial + d).split("\n");
      partial = lines.pop()!;
      for (const l of lines) io.err(`${l}\n`);
    });
    child.on("error", (err) => resolve({ code: -1, stdout, stderr: stderr + err.message }));
    child.on("close", (code, signal) => {
      if (partial !== "") io.err(`${partial}\n`);
      resolve({ code: code ?? (signal !== null ? 128 : -1), stdout, stderr: signal !== null ? `${stderr}killed by ${signal}` : stderr });
    });
  });
}

export function lastLine(text: string): string {
  return text.trim().split("\n").pop() ?? "";
}

export function tail(text: string, lines = 5): string {
  return text.trim().split("\n").slice(-lines).join(" | ");
}
