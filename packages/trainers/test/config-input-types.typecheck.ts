/**
 * Type-level tests, checked by `pnpm typecheck` (tsconfig includes test/) and never run: a choice
 * field's input is the union of its names and aliases, so a misspelled value fails to compile, and
 * the MARLHF configs do not take MADPO's own fields. Each @ts-expect-error fails the typecheck if
 * the line below it ever compiles.
 */
import { MADPOConfig, MADPOIterConfig, MADPOIterTrainer, MARLHFConfig, MARLHFIterConfig, type MADPOIterConfigInput } from "../src/index.js";

// @ts-expect-error "histroy" is not a comparator_policy
MADPOIterConfig({ comparator_policy: "histroy" });
// @ts-expect-error "lambda-decay" is not a preference_replay_mode (lambda_decay, or the aliases lambda, td_lambda, td-lambda)
MARLHFIterConfig({ preference_replay_mode: "lambda-decay" });
// @ts-expect-error "magrp" is not an rl_algorithm
MARLHFConfig({ rl_algorithm: "magrp" });
// @ts-expect-error "centralised " is no collaboration_mode (the alias belongs to comparator_generation_mode)
MADPOConfig({ collaboration_mode: "centralised" });
// @ts-expect-error madpo_score_last_token is MADPO's own field
MARLHFConfig({ madpo_score_last_token: true });

const rewardFunc = (c: string[][]) => c[0]!.map(() => 0);
// @ts-expect-error the trainer's args are typed too
new MADPOIterTrainer({ trainDataset: [], rewardFunc, args: { comparator_policy: "histroy" } });

// The names and aliases compile, and a choice reads back as its canonical names.
const ok: MADPOIterConfigInput = { comparator_policy: "previous", preference_replay_mode: "lambda_decay", pair_selection: "comparator_reward" };
const policy: "current" | "current_copy" | "model" | "history" | "api" = MADPOIterConfig(ok).comparator_policy;
MARLHFConfig({ rl_algorithm: "mareforce", dpo_beta: 0.2 });
MADPOConfig({ madpo_score_last_token: true, backend: "wasm" });
export { policy };
