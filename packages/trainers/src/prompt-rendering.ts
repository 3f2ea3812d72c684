/**
 * Every prompt of a run, made once before it starts: each train and eval item formatted (the
 * user's formatters; centralized, the joint prompt built from the roles'), chat messages rendered
 * with the actor's chat template (in a child process: chat-templates.ts), and the text encoded with
 * the actor's tokenizer (a text too long in bytes for the model's context refused, or cut, first:
 * promptTextToEncode). Rounds and evaluations read the task's PromptBook, so no user code and no
 * template runs while a round is under way, and a prompt that cannot be made stops the run before
 * output_dir is touched, with an error naming the data set, the item and the agent.
 */
import {
  describeItem,
  encodeRenderedPrompt,
  isChatPrompt,
  type DatasetName,
  type PromptLimits,
  type PromptSite,
  type PromptTokenizer,
  type TaskItem,
} from "@pbrl/preference-data";
import { ProcessChatTemplates } from "./chat-templates.js";
import type { TaskSetup } from "./collaboration.js";

export interface RunPromptsOptions {
  task: TaskSetup;
  /** One per actor model. */
  tokenizers: readonly PromptTokenizer[];
  /** One per actor model: what its prompts must fit. */
  limits: readonly PromptLimits[];
  datasets: readonly { name: DatasetName; items: readonly TaskItem[] }[];
  /** reward_timeout_s: seconds one formatter call, or one template's rendering of a prompt, may take; null: no limit. */
  timeoutS: number | null;
  /** Aborting it stops the work at once (a template's process included), rejecting with its reason. */
  signal?: AbortSignal | undefined;
}

/** Fills `task.prompts` with every item's prompts (an item in both data sets once). */
export async function renderRunPrompts(o: RunPromptsOptions): Promise<void> {
  const templates = new ProcessChatTemplates(o.tokenizers, o.timeoutS, o.signal);
  try {
    for (const { name, items } of o.datasets) {
      for (const [k, item] of items.entries()) {
        o.signal?.throwIfAborted();
        if (o.task.prompts.has(item)) continue;
        const formatted = await o.task.format(item, k, { dataset: name, timeoutS: o.timeoutS, signal: o.signal });
        const itemName = `${name} ${describeItem({ item, itemIndex: k })}`;
        const texts: string[] = [];
        const ids: number[][] = [];
        for (const [a, prompt] of formatted.prompts.entries()) {
          const site: PromptSite = { agent: a, itemIndex: k, itemName };
          const text = isChatPrompt(prompt) ? await templates.render(prompt, site) : prompt;
          texts.push(text);
          ids.push(encodeRenderedPrompt(o.tokenizers[a]!, text, isChatPrompt(prompt), site, o.limits[a]));
        }
        o.task.prompts.add(item, { texts, ids, ...(formatted.roleTexts !== undefined && { roleTexts: formatted.roleTexts }) });
      }
    }
  } finally {
    templates.close();
  }
}
