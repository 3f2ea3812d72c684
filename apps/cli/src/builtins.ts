/** Built-in tasks: what `reward_func: <name>` and `pbrl demo` refer to. */
import type { Formatter, RewardFunc, TaskItem } from "@pbrl/trainers";
import { loadSummaryExpansionTask, SUMMARY_EXPANSION_FORMATTERS, SUMMARY_EXPANSION_REWARD_RANGE, summaryExpansionReward } from "./tasks/summary-expansion.js";

export interface BuiltinTask {
  description: string;
  rewardFunc: RewardFunc;
  formatters: Formatter[];
  load: () => { train: TaskItem[]; eval: TaskItem[] };
}

export const BUILTIN_TASKS: Record<string, BuiltinTask> = {
  summary_expansion: {
    description: "two agents: a short faithful summary and a longer faithful expansion of the same text (the demo task)",
    // the declared raw range, which log_reward_distribution bins over (CoMLRL's reward_func.reward_range)
    rewardFunc: Object.assign(summaryExpansionReward, { reward_range: SUMMARY_EXPANSION_REWARD_RANGE }),
    formatters: SUMMARY_EXPANSION_FORMATTERS as unknown as Formatter[],
    load: () => {
      const t = loadSummaryExpansionTask();
      return { train: t.train as unknown as TaskItem[], eval: t.eval as unknown as TaskItem[] };
    },
  },
};
