/** The shapes the HTTP API accepts; a request that does not fit is answered 400 with the reasons. */
import { z } from "zod";

/** Names show up in the label files people read: printable, short, not blank. */
export const AnnotatorSchema = z
  .string()
  .trim()
  .min(1, "annotator: give a name")
  .max(64, "annotator: at most 64 characters")
  .refine((s) => !/[\p{Cc}\p{Cf}]/u.test(s), "annotator: no control characters");

export const LabelBodySchema = z.strictObject({
  leaseId: z.string().min(1).max(128),
  annotator: AnnotatorSchema,
  verdict: z.enum(["left", "right", "tie", "both_bad"]),
  rationale: z.string().max(8000).nullable().optional(),
});

export const SkipBodySchema = z.strictObject({ leaseId: z.string().min(1).max(128) });

export function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => (i.path.length > 0 && !i.message.startsWith(`${String(i.path[0])}:`) ? `${i.path.join(".")}: ${i.message}` : i.message))
    .join("; ");
}
