/**
 * `reward_distributions/iteration_NNNN.json`, the trainers' per-round reward histograms in
 * CoMLRL's layout (see packages/trainers/src/reward-distribution.ts): bins over
 * [reward_min, reward_max], and for candidates and selected (training) pairs a target and a
 * comparator series with counts and, in pbrl's and CoMLRL's files, the raw values.
 */
import { z } from "zod";

const count = z.number().int().min(0);

const SeriesSchema = z.looseObject({
  sample_count: count,
  mean: z.number().nullable(),
  counts: z.array(count),
  // CoMLRL and pbrl both write it; a file without it is still drawn, from its counts
  raw_rewards: z.array(z.number()).optional(),
});

const PairSchema = z.looseObject({ target: SeriesSchema, comparator: SeriesSchema });

export const RewardDistributionSchema = z
  .looseObject({
    iteration: z.number().int().min(1),
    reward_min: z.number(),
    reward_max: z.number(),
    num_bins: z.number().int().min(1),
    bin_edges: z.array(z.number()),
    bin_centers: z.array(z.number()).optional(),
    candidate: PairSchema,
    selected: PairSchema.optional(),
  })
  .superRefine((f, ctx) => {
    if (!(f.reward_min < f.reward_max))
      ctx.addIssue({ code: "custom", path: ["reward_max"], message: `reward range [${f.reward_min}, ${f.reward_max}] is empty` });
    if (f.bin_edges.length !== f.num_bins + 1)
      ctx.addIssue({ code: "custom", path: ["bin_edges"], message: `has ${f.bin_edges.length} edges for ${f.num_bins} bins` });
    for (const group of ["candidate", "selected"] as const) {
      for (const side of ["target", "comparator"] as const) {
        const s = f[group]?.[side];
        if (s !== undefined && s.counts.length !== f.num_bins)
          ctx.addIssue({ code: "custom", path: [group, side, "counts"], message: `has ${s.counts.length} counts for ${f.num_bins} bins` });
      }
    }
  });

export type RewardSeries = z.infer<typeof SeriesSchema>;
export type RewardDistribution = z.infer<typeof RewardDistributionSchema>;

export class RewardDistributionFormatError extends Error {
  override name = "RewardDistributionFormatError";
}

/** Checks a distribution file's parsed JSON; throws RewardDistributionFormatError naming what is wrong. */
export function parseRewardDistribution(json: unknown): RewardDistribution {
  const parsed = RewardDistributionSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.length > 0 ? i.path.join(".") : "(root)"}: ${i.message}`)
      .join("; ");
    throw new RewardDistributionFormatError(`not a reward distribution file: ${issues}`);
  }
  return parsed.data;
}
