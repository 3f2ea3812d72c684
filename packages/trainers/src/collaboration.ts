/**
 * Centralized collaboration (collaboration_mode="centralized"): one actor model writes every
 * role. Its prompt is the adapter's joint prompt built from each role's prompt; its completion
 * is split back into role responses only to score it with the task reward. Learning sees the
 * joint text and tokens. A completion that cannot be split is an invalid candidate: counted,
 * never paired, and scored with empty role responses where a score is needed (evaluation).
 */
import { TaggedCentralizedAdapter } from "@pbrl/comparators";
import {
  CentralizedParseError,
  formatPrompts,
  resolveFormatters,
  type CandidateCheck,
  type CentralizedAdapter,
  type Formatter,
  type RewardFunc,
  type TaskItem,
} from "@pbrl/preference-data";

/** What a trainer works with, for either collaboration mode. */
export interface TaskSetup {
  /** One formatter per actor model. */
  formatters: Formatter[];
  rewardFunc: RewardFunc;
  isValid: CandidateCheck | undefined;
  /** Actor models: num_agents, or 1 when one actor writes every role. */
  actors: number;
  /** Centralized scoring covers the whole joint completion, its last token included. */
  scoreLastToken: boolean;
}

function split(adapter: CentralizedAdapter, text: string, item: TaskItem, roles: number): string[] | undefined {
  try {
    return adapter.parseCompletion(text, item, roles);
  } catch (err) {
    if (err instanceof CentralizedParseError) return undefined;
    throw err;
  }
}

export function taskSetup(o: {
  collaborationMode: "decentralized" | "centralized";
  numAgents: number;
  formatters: Formatter | readonly Formatter[] | undefined;
  rewardFunc: RewardFunc;
  adapter: CentralizedAdapter | undefined;
  scoreLastToken: boolean;
}): TaskSetup {
  const roleFormatters = resolveFormatters(o.formatters, o.numAgents);
  if (o.collaborationMode === "decentralized") return { formatters: roleFormatters, rewardFunc: o.rewardFunc, isValid: undefined, actors: o.numAgents, scoreLastToken: o.scoreLastToken };
  const adapter = o.adapter ?? new TaggedCentralizedAdapter();
  const roles = o.numAgents;
  const jointPrompt: Formatter = (item) => {
    const p = adapter.buildPrompt(item, formatPrompts(roleFormatters, item, -1, { unit: "role" }));
    if (typeof p !== "string" || p.trim() === "") throw new Error("the centralized adapter built an empty joint prompt; it must return a non-empty string");
    return p;
  };
  const rewardFunc: RewardFunc = (completions, context) => {
    const joint = completions[0] ?? [];
    const byRole = Array.from({ length: roles }, () => new Array<string>(joint.length).fill(""));
    joint.forEach((text, j) => split(adapter, text, context.item, roles)?.forEach((r, role) => (byRole[role]![j] = r)));
    return o.rewardFunc(byRole, { ...context, prompts: formatPrompts(roleFormatters, context.item, context.itemIndex, { unit: "role" }) });
  };
  return { formatters: [jointPrompt], rewardFunc, isValid: (texts, item) => split(adapter, texts[0]!, item, roles) !== undefined, actors: 1, scoreLastToken: true };
}
