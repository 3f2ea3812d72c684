import { spawn } from "node:child_process";
import type { CliIO } from "../io.js";

/** Spawns a process, forwards its stderr line by line to io.err, collects stdout. */
export function runChild(command: string, args: string[], io: CliIO): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
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
