/**
 * Centralized collaboration (collaboration_mode="centralized"): one actor model writes every
 * role. Its prompt is the adapter's joint prompt built from each role's prompt; its completion
 * is split back into role responses only to score it with the task reward. Learning sees the
 * joint text and tokens. A completion that cannot be split is an invalid candidate: counted,
 * never paired, and scored with empty role responses where a score is needed (evaluation).
 *
 * Chat prompts: a role's formatter may return chat messages. The adapter builds the joint prompt
 * from text, so each role's messages become text first (see rolePromptText), and a joint prompt
 * built from any chat role is itself one user message, which the actor renders with its own chat
 * template like any chat prompt (an actor without one is a ChatTemplateError before the run
 * starts). The reward receives the roles' prompts as that text.
 */
import { TaggedCentralizedAdapter } from "@pbrl/comparators";
import {
  CentralizedParseError,
  formatAgentPrompts,
  isChatPrompt,
  resolveFormatters,
  type ChatMessage,
  type Prompt,
  type CandidateCheck,
  type CentralizedAdapter,
  type Formatter,
  type RewardFunc,
  type TaskItem,
} from "@pbrl/preference-data";

/** A formatter whose prompts are of type P: text formatters give text prompts, in either mode. */
export type PromptFormatter<P extends Prompt> = (item: TaskItem) => P;

/** What a trainer works with, for either collaboration mode. */
export interface TaskSetup<P extends Prompt = Prompt> {
  /** One formatter per actor model. */
  formatters: PromptFormatter<P>[];
  rewardFunc: RewardFunc;
  isValid: CandidateCheck | undefined;
  /** Actor models: num_agents, or 1 when one actor writes every role. */
  actors: number;
  /** Centralized scoring covers the whole joint completion, its last token included. */
  scoreLastToken: boolean;
}

/**
 * A role's prompt as text for the joint prompt: text as it is; one chat message as its content;
 * several as `role: content` blocks, so a system message or earlier turns stay readable. No
 * template is applied here: the joint prompt as a whole goes through the actor's.
 */
export function rolePromptText(prompt: Prompt): string {
  if (!isChatPrompt(prompt)) return prompt;
  if (prompt.length === 1) return prompt[0]!.content;
  return prompt.map((m) => `${m.role}: ${m.content}`).join("\n\n");
}

function split(adapter: CentralizedAdapter, text: string, item: TaskItem, roles: number): string[] | undefined {
  try {
    return adapter.parseCompletion(text, item, roles);
  } catch (err) {
    if (err instanceof CentralizedParseError) return undefined;
    throw err;
  }
}

export function taskSetup<P extends Prompt = Prompt>(o: {
  collaborationMode: "decentralized" | "centralized";
  numAgents: number;
  formatters: PromptFormatter<P> | readonly PromptFormatter<P>[] | undefined;
  rewardFunc: RewardFunc;
  adapter: CentralizedAdapter | undefined;
  scoreLastToken: boolean;
}): TaskSetup<P> {
  // Without formatters P is Prompt (the default formatter's); with them, they are returned as given.
  const roleFormatters = resolveFormatters(o.formatters, o.numAgents) as PromptFormatter<P>[];
  if (o.collaborationMode === "decentralized")
    return { formatters: roleFormatters, rewardFunc: o.rewardFunc, isValid: undefined, actors: o.numAgents, scoreLastToken: o.scoreLastToken };
  const adapter = o.adapter ?? new TaggedCentralizedAdapter();
  const roles = o.numAgents;
  const jointPrompt: Formatter = (item) => {
    const rolePrompts = formatAgentPrompts(roleFormatters, item, -1, { unit: "role" });
    const p = adapter.buildPrompt(item, rolePrompts.map(rolePromptText));
    if (typeof p !== "string" || p.trim() === "") throw new Error("the centralized adapter built an empty joint prompt; it must return a non-empty string");
    // Chat roles make a chat joint prompt, so a chat actor sees its own template around it.
    return rolePrompts.some(isChatPrompt) ? ([{ role: "user", content: p }] satisfies ChatMessage[]) : p;
  };
  const rewardFunc: RewardFunc = (completions, context) => {
    const joint = completions[0] ?? [];
    const byRole = Array.from({ length: roles }, () => new Array<string>(joint.length).fill(""));
    joint.forEach((text, j) => split(adapter, text, context.item, roles)?.forEach((r, role) => (byRole[role]![j] = r)));
    return o.rewardFunc(byRole, {
      ...context,
      prompts: formatAgentPrompts(roleFormatters, context.item, context.itemIndex, { unit: "role" }).map(rolePromptText),
    });
  };
  // Text role prompts (P = string) give a text joint prompt: only chat roles make a chat one.
  return {
    formatters: [jointPrompt as PromptFormatter<P>],
    rewardFunc,
    isValid: (texts, item) => split(adapter, texts[0]!, item, roles) !== undefined,
    actors: 1,
    scoreLastToken: true,
  };
}
