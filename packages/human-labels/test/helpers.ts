import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { Comparison, LabelRecord, Lease, RecordedVerdict, Verdict } from "../src/index.js";

export function tempDir(prefix = "pbrl-human-labels-"): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Two agents, distinct texts, so a test can tell from the text which answer a side shows. */
export function comparisons(n: number, round = 1): Comparison[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `r${round}-c${i}`,
    round,
    itemIndex: i,
    itemId: `item-${i}`,
    prompts: [`prompt ${i} for the writer`, `prompt ${i} for the critic`],
    roles: ["writer", "critic"],
    target: [`target writer ${i}`, `target critic ${i}`],
    comparator: [`comparator writer ${i}`, `comparator critic ${i}`],
  }));
}

/** A clock the test moves by hand. */
export class Clock {
  t = Date.parse("2026-01-01T00:00:00Z");
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** The on-screen pick that stores `want`, given the lease's shown order. */
export function pickFor(lease: Pick<Lease, "leftIs">, want: RecordedVerdict): Verdict {
  if (want === "tie" || want === "both_bad") return want;
  return want === lease.leftIs ? "left" : "right";
}

export function record(overrides: Partial<LabelRecord> = {}): LabelRecord {
  return {
    comparison_id: "r1-c0",
    round: 1,
    item_index: 0,
    item_id: "item-0",
    winner: "target",
    verdict: "target",
    shown_left: "comparator",
    annotator: "ada",
    rationale: null,
    labelled_at: "2026-01-01T00:00:00.000Z",
    scorer: "human",
    ...overrides,
  };
}
