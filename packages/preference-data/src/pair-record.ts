/**
 * The preference pair record and the files that hold them, as zod schemas. Field names and
 * meanings are CoMLRL's, so files move between the two libraries; extra fields are allowed and
 * kept (a feature may add its own), and the three raw-reward fields appear only in iterative
 * training.
 */
import { promises as fs } from "node:fs";
import { writeFileAtomic } from "@pbrl/core-tensor";
import { z } from "zod";

// zod 4 numbers are finite: NaN and ±Infinity are refused as "expected number"
const finite = z.number();

/** A file-level problem the field types cannot say, under the field it is about. */
function mismatch(ctx: z.RefinementCtx, field: string, message: string): void {
  // Stryker disable next-line StringLiteral: the code is zod's bookkeeping; pbrl's messages print the path and message only
  ctx.addIssue({ code: "custom", path: [field], message });
}

function checkPairCount(f: { num_pairs: number; pairs: readonly unknown[] }, ctx: z.RefinementCtx): void {
  if (f.num_pairs !== f.pairs.length) mismatch(ctx, "num_pairs", `is ${f.num_pairs} but the file holds ${f.pairs.length} pairs`);
}
const tokenIdLists = z.array(z.array(z.number().int().min(0))).optional();

export const PairRecordSchema = z
  .looseObject({
    prompts: z.array(z.string()).min(1),
    winner_completions: z.array(z.string()).min(1),
    loser_completions: z.array(z.string()).min(1),
    winner_reward: finite,
    loser_reward: finite,
    candidate_reward_mean: finite,
    raw_rewards: z.array(finite).length(2).nullable().optional(),
    target_raw_reward: finite.nullable().optional(),
    comparator_raw_reward: finite.nullable().optional(),
    // pbrl's own: the exact token ids that were scored, so a replayed pair trains on the same
    // tokens (EOS included) instead of a re-encoding of decoded text.
    prompt_token_ids: tokenIdLists,
    winner_token_ids: tokenIdLists,
    loser_token_ids: tokenIdLists,
  })
  .superRefine((r, ctx) => {
    const n = r.prompts.length;
    for (const key of ["winner_completions", "loser_completions", "prompt_token_ids", "winner_token_ids", "loser_token_ids"] as const) {
      const v = r[key];
      if (v !== undefined && v.length !== n) mismatch(ctx, key, `has ${v.length} entries but prompts has ${n}; one per agent`);
    }
  });

export type PairRecord = z.infer<typeof PairRecordSchema>;

/** What labelled a round's comparisons: the task reward, MARLHF's latest fitted reward model, or people (preference_labeler="human"). */
export const PREFERENCE_SCORERS = ["task", "reward_model", "human"] as const;
export type PreferenceScorer = (typeof PREFERENCE_SCORERS)[number];

/**
 * `iteration_0001.json` …: one round of iterative training. `scorer` is pbrl's own (CoMLRL's
 * files do not say, and read without it): what labelled the round's pairs.
 */
export const RoundFileSchema = z
  .object({
    iteration: z.number().int().min(1),
    num_pairs: z.number().int().min(0),
    scorer: z.enum(PREFERENCE_SCORERS).optional(),
    pairs: z.array(PairRecordSchema),
  })
  .superRefine(checkPairCount);
export type RoundFile = z.infer<typeof RoundFileSchema>;

/** The pairs a base trainer collected (`preference_pairs.json`). */
export const PairsFileSchema = z.object({ num_pairs: z.number().int().min(0), pairs: z.array(PairRecordSchema) }).superRefine(checkPairCount);
export type PairsFile = z.infer<typeof PairsFileSchema>;

export class PairFileError extends Error {
  override name = "PairFileError";
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}

async function readValidated<S extends z.ZodType>(file: string, schema: S, what: string): Promise<z.infer<S>> {
  let text: string;
  try {
    // Stryker disable next-line StringLiteral: JSON.parse reads a Buffer as the same UTF-8 text
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    throw new PairFileError(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new PairFileError(`${what} ${file} is not valid JSON (truncated or corrupt?): ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new PairFileError(`${what} ${file} does not match the schema: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

/** Validates a record before it is written, so no invalid file is ever produced. */
function checked<S extends z.ZodType>(value: unknown, schema: S, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new PairFileError(`refusing to write an invalid ${what}: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

export function roundFileName(round: number): string {
  return `iteration_${String(round).padStart(4, "0")}.json`;
}

export async function writeRoundFile(file: string, round: number, pairs: readonly PairRecord[], scorer?: PreferenceScorer): Promise<void> {
  // an unset scorer is left out of the file (JSON drops undefined), as CoMLRL's files have none
  const body = checked({ iteration: round, num_pairs: pairs.length, scorer, pairs }, RoundFileSchema, "round file");
  await writeFileAtomic(file, JSON.stringify(body));
}

export function readRoundFile(file: string): Promise<RoundFile> {
  return readValidated(file, RoundFileSchema, "round file");
}

export async function writePairsFile(file: string, pairs: readonly PairRecord[]): Promise<void> {
  const body = checked({ num_pairs: pairs.length, pairs }, PairsFileSchema, "pairs file");
  await writeFileAtomic(file, JSON.stringify(body));
}

export function readPairsFile(file: string): Promise<PairsFile> {
  return readValidated(file, PairsFileSchema, "pairs file");
}
