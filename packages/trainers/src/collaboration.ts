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
  formatAgentPromptsAsync,
  isChatPrompt,
  PromptBook,
  resolveFormatters,
  type AsyncFormatOptions,
  type AsyncFormatter,
  type ChatMessage,
  type Prompt,
  type CandidateCheck,
  type CentralizedAdapter,
  type Formatter,
  type Policy,
  type RewardFunc,
  type TaskItem,
} from "@pbrl/preference-data";

/** One item's prompts as its formatters built them, before any chat template. */
export interface FormattedItem {
  /** One per actor model: text, or chat messages its chat template renders. */
  prompts: Prompt[];
  /** Each role's prompt as text, when one actor writes every role (the reward's `prompts`). */
  roleTexts?: string[];
}

/** What a trainer works with, for either collaboration mode. */
export interface TaskSetup {
  /**
   * Runs the formatters on one item (and, centralized, builds the joint prompt from the roles'):
   * the trainers call it once per train and eval item, before a run starts (prompt-rendering.ts).
   */
  format(item: TaskItem, itemIndex: number, options: AsyncFormatOptions): Promise<FormattedItem>;
  /** Every item's prompts once rendered: what the run samples from and the reward is given. */
  prompts: PromptBook;
  /** One formatter per actor model, reading the item's rendered prompt from `prompts` (no user code runs). */
  formatters: Formatter[];
  /** The agents as samplers take them: with their rendered prompts' ids, so none is encoded again. */
  policies<A extends Policy>(agents: readonly A[]): A[];
  /** Undefined only when people label (preference_labeler="human") and none was given. */
  rewardFunc: RewardFunc | undefined;
  isValid: CandidateCheck | undefined;
  /** Actor models: num_agents, or 1 when one actor writes every role. */
  actors: number;
  /** Centralized scoring covers the whole joint completion, its last token included (decentralized: madpo_score_last_token decides). */
  scoresWholeCompletion: boolean;
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

export function taskSetup(o: {
  collaborationMode: "decentralized" | "centralized";
  numAgents: number;
  formatters: AsyncFormatter | readonly AsyncFormatter[] | undefined;
  rewardFunc: RewardFunc | undefined;
  adapter: CentralizedAdapter | undefined;
}): TaskSetup {
  const roleFormatters = resolveFormatters(o.formatters, o.numAgents);
  const prompts = new PromptBook();
  const shared = {
    prompts,
    policies: <A extends Policy>(agents: readonly A[]): A[] => agents.map((ag, a) => ({ ...ag, renderedPrompts: prompts.idsByText(a) })),
  };
  if (o.collaborationMode === "decentralized")
    return {
      ...shared,
      format: async (item, itemIndex, options) => ({ prompts: await formatAgentPromptsAsync(roleFormatters, item, itemIndex, options) }),
      formatters: prompts.formatters(o.numAgents),
      rewardFunc: o.rewardFunc,
      isValid: undefined,
      actors: o.numAgents,
      scoresWholeCompletion: false,
    };
  const adapter = o.adapter ?? new TaggedCentralizedAdapter();
  const roles = o.numAgents;
  const format = async (item: TaskItem, itemIndex: number, options: AsyncFormatOptions): Promise<FormattedItem> => {
    const rolePrompts = await formatAgentPromptsAsync(roleFormatters, item, itemIndex, { ...options, unit: "role" });
    const roleTexts = rolePrompts.map(rolePromptText);
    const jointPrompt: Formatter = () => {
      const p = adapter.buildPrompt(item, roleTexts);
      if (typeof p !== "string" || p.trim() === "") throw new Error("the centralized adapter built an empty joint prompt; it must return a non-empty string");
      // Chat roles make a chat joint prompt, so a chat actor sees its own template around it.
      return rolePrompts.some(isChatPrompt) ? ([{ role: "user", content: p }] satisfies ChatMessage[]) : p;
    };
    return { prompts: formatAgentPrompts([jointPrompt], item, itemIndex, { dataset: options.dataset }), roleTexts };
  };
  const taskReward = o.rewardFunc;
  const rewardFunc: RewardFunc | undefined =
    taskReward &&
    ((completions, context) => {
      const joint = completions[0] ?? [];
      const byRole = Array.from({ length: roles }, () => new Array<string>(joint.length).fill(""));
      joint.forEach((text, j) => split(adapter, text, context.item, roles)?.forEach((r, role) => (byRole[role]![j] = r)));
      return taskReward(byRole, { ...context, prompts: prompts.get(context.item).roleTexts! });
    });
  return {
    ...shared,
    format,
    formatters: prompts.formatters(1),
    rewardFunc,
    isValid: (texts, item) => split(adapter, texts[0]!, item, roles) !== undefined,
    actors: 1,
    scoresWholeCompletion: true,
  };
}
