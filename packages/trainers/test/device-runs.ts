// The suites' small runs, one per config that has a given device field, for the device tests.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  MADPOIterTrainer,
  MADPOTrainer,
  MARLHFIterTrainer,
  MARLHFTrainer,
  type MADPOConfigInput,
  type MADPOIterConfigInput,
  type MARLHFIterConfigInput,
} from "../src/index.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

/** A fresh output_dir that does not exist yet, so a run that writes anything would create it. */
export const unusedDir = () => path.join(mkdtempSync(path.join(tmpdir(), "pbrl-devices-")), "out");

export interface Run {
  train: () => Promise<unknown>;
  dispose: () => void;
}

/** The smallest trainer whose config has `field` (bf16: MADPO's), with `extra` set. */
export function trainerWith(field: string, extra: Record<string, unknown>, outputDir: string): { run: Run; configName: string } {
  // The fields under test are what these runs are about; the rest is the suites' small runs.
  const common = { verbose: false, output_dir: outputDir, ...extra } as MADPOConfigInput;
  switch (field) {
    case "agent_devices":
    case "bf16":
      return { run: new MADPOTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args: small(common) }), configName: "MADPOConfig" };
    case "reference_devices":
      return {
        run: new MARLHFTrainer({
          agentModel: TINY,
          trainDataset: items,
          rewardFunc: countE,
          args: { ...small(common), reference_kl_enabled: true, num_generations: 2 },
        }),
        configName: "MARLHFConfig",
      };
    case "comparator_devices":
      return {
        run: new MADPOIterTrainer({
          ...ITERATIVE_RUN,
          args: { ...ITERATIVE_RUN.args, comparator_policy: "current_copy", comparator_history_k: null, ...(common as MADPOIterConfigInput) },
          handleSignals: false,
        }),
        configName: "MADPOIterConfig",
      };
    default:
      return {
        run: new MARLHFIterTrainer({
          ...ITERATIVE_RUN,
          args: { ...ITERATIVE_RUN.args, ...MARLHF_ITER_ARGS, rl_algorithm: "maac", ...(common as MARLHFIterConfigInput) },
          handleSignals: false,
        }),
        configName: "MARLHFIterConfig",
      };
  }
}
