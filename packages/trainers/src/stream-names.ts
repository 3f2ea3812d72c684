/**
 * The run's random streams the trainers draw from, split off `seed` by name. The names are part
 * of checkpoints (a resume restores each stream by its name): never rename one.
 */
export const STREAMS = {
  policy: "policy_sampling",
  eval: "eval_sampling",
  pairs: "pair_selection",
  shuffle: "epoch_shuffle",
  comparator: "comparator_sampling",
  replay: "replay",
  apiBackoff: "comparator_api_backoff",
  // per agent: `${name}/agent_<i>`
  loraInit: "lora_init",
  loraDropout: "lora_dropout",
  rewardLoraInit: "reward_lora_init",
} as const;
