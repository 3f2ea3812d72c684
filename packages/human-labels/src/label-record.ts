/**
 * The label record's schema and the translation of a pick on screen into a stored record. Extra
 * fields are allowed and kept, so a tool can annotate lines without pbrl refusing its files.
 */
import { z } from "zod";
import type { Comparison, LabelRecord, RecordedVerdict, Side, Verdict } from "./types.js";

const side = z.enum(["target", "comparator"]);

export const LabelRecordSchema = z
  .looseObject({
    comparison_id: z.string().min(1),
    round: z.number().int().min(0),
    item_index: z.number().int().min(0),
    item_id: z.string().optional(),
    winner: side.nullable(),
    verdict: z.enum(["target", "comparator", "tie", "both_bad"]),
    shown_left: side,
    annotator: z.string().min(1),
    rationale: z.string().nullable(),
    labelled_at: z.iso.datetime({ offset: true }),
    scorer: z.literal("human"),
  })
  .superRefine((r, ctx) => {
    const expected = r.verdict === "target" || r.verdict === "comparator" ? r.verdict : null;
    if (r.winner !== expected) ctx.addIssue({ code: "custom", path: ["winner"], message: `must be ${JSON.stringify(expected)} for verdict "${r.verdict}"` });
  });

/** Checks a parsed line; the message names the fields at fault. */
export function parseLabelRecord(value: unknown): { ok: true; record: LabelRecord } | { ok: false; message: string } {
  const r = LabelRecordSchema.safeParse(value);
  if (r.success) return { ok: true, record: r.data as LabelRecord };
  return { ok: false, message: r.error.issues.map((i) => `${i.path.join(".") || "(record)"}: ${i.message}`).join("; ") };
}

/** The stored verdict of a pick, given which joint answer the left side showed. */
export function recordedVerdict(verdict: Verdict, shownLeft: Side): RecordedVerdict {
  if (verdict === "tie" || verdict === "both_bad") return verdict;
  const other: Side = shownLeft === "target" ? "comparator" : "target";
  return verdict === "left" ? shownLeft : other;
}

export interface PickDetails {
  comparison: Comparison;
  shownLeft: Side;
  verdict: Verdict;
  annotator: string;
  rationale: string | null;
  labelledAt: Date;
}

export function makeLabelRecord(p: PickDetails): LabelRecord {
  const verdict = recordedVerdict(p.verdict, p.shownLeft);
  const record: LabelRecord = {
    comparison_id: p.comparison.id,
    round: p.comparison.round,
    item_index: p.comparison.itemIndex,
    winner: verdict === "target" || verdict === "comparator" ? verdict : null,
    verdict,
    shown_left: p.shownLeft,
    annotator: p.annotator,
    rationale: p.rationale,
    labelled_at: p.labelledAt.toISOString(),
    scorer: "human",
  };
  // only when known, so the line has no `"item_id": undefined` hole that JSON would drop anyway
  if (p.comparison.itemId !== undefined) record.item_id = p.comparison.itemId;
  return record;
}
