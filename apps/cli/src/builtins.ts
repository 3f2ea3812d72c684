/** Built-in tasks: what `reward_func: <name>` and `pbrl demo` refer to. */
import type { Formatter, RewardFunc, TaskItem } from "@pbrl/trainers";
import { loadSummaryExpansionTask, SUMMARY_EXPANSION_FORMATTERS, summaryExpansionReward } from "./tasks/summary-expansion.js";

export interface BuiltinTask {
  description: string;
  rewardFunc: RewardFunc;
  formatters: Formatter[];
  load: () => { train: TaskItem[]; eval: TaskItem[] };
}

export const BUILTIN_TASKS: Record<string, BuiltinTask> = {
  summary_expansion: {
    description: "two agents: a short faithful summary and a longer faithful expansion of the same text (the demo task)",
    rewardFunc: summaryExpansionReward,
    formatters: SUMMARY_EXPANSION_FORMATTERS as unknown as Formatter[],
    load: () => {
      const t = loadSummaryExpansionTask();
      return { train: t.train as unknown as TaskItem[], eval: t.eval as unknown as TaskItem[] };
    },
  },
};
