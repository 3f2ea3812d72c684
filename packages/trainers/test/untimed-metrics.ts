import { readFileSync } from "node:fs";

/** metrics.jsonl's records without their wall-clock fields (`time`, `elapsed_s`), which differ between any two runs. */
export function untimedMetrics(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => {
      const { time: _t, elapsed_s: _e, ...rest } = JSON.parse(l) as Record<string, unknown>;
      return rest;
    });
}
