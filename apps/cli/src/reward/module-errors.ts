/** Messages for a user's module (reward, reward_processor, formatters) that fails to load. */
import { spawnSync } from "node:child_process";
import { UsageError } from "../io.js";

export class RewardModuleError extends UsageError {
  override name = "RewardModuleError";
}

/**
 * Where a syntax error is, as "FILE:LINE:COLUMN". Node 20's import() of an ES module with a
 * syntax error names neither the file nor the line; `node --check` prints both (the column from
 * its caret line). Undefined when FILE itself parses (the error is in a module it imports).
 */
export function locateSyntaxError(file: string): string | undefined {
  const r = spawnSync(process.execPath, ["--check", file], { encoding: "utf8", timeout: 30_000 });
  if (r.status === 0 || typeof r.stderr !== "string") return undefined;
  const lines = r.stderr.split("\n");
  const at = lines.findIndex((l) => /:\d+$/.test(l));
  if (at < 0) return undefined;
  const line = /:(\d+)$/.exec(lines[at]!)![1]!;
  const caret = lines.slice(at + 1, at + 4).find((l) => /^\s*\^+\s*$/.test(l));
  return `${file}:${line}${caret !== undefined ? `:${caret.indexOf("^") + 1}` : ""}`;
}

/**
 * The error for `file` (given as `key`) failing to import with `name: message`; `frame` is where
 * its stack points (a runtime error in the module's top-level code).
 */
export function moduleLoadError(key: string, file: string, name: string, message: string, frame?: string): RewardModuleError {
  if (name === "SyntaxError") {
    const where = locateSyntaxError(file);
    if (where !== undefined) return new RewardModuleError(`${key}: ${file} has a syntax error at ${where}: ${message}; fix the module and run again`);
  }
  const at =
    frame !== undefined
      ? ` (at ${frame})`
      : name === "SyntaxError"
        ? ` (${file} itself parses: the error is in a module it imports, or its top-level code threw it)`
        : "";
  return new RewardModuleError(`${key}: importing ${file} failed: ${name}: ${message}${at}`);
}
