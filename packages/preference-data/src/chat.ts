/**
 * Chat prompts: a formatter may return chat messages (TRL's conversational format) instead of
 * text. Each agent renders them with its own tokenizer's chat template, with
 * add_generation_prompt=true, and tokenizes the rendered text as transformers'
 * apply_chat_template(tokenize=True) does: without adding special tokens, since the template
 * already writes the ones the model expects (a BOS, the role markers).
 */
import type { ChatMessage, Tokenizer } from "@pbrl/models";
import { describeItem, errorMessage } from "./describe.js";
import { FormatterError, isChatPrompt } from "./formatters.js";
import { promptTextToEncode, type PromptLimits } from "./prompt-length.js";
import type { Prompt, TaskItem } from "./types.js";

/**
 * What rendering and encoding a prompt needs of an agent's tokenizer; `longestTokenBytes`, when
 * it has it, lets a prompt too long for the model's context be refused (or cut) before it is tokenized.
 */
export type PromptTokenizer = Pick<Tokenizer, "encode" | "applyChatTemplate" | "chatTemplate" | "specialTokens"> &
  Partial<Pick<Tokenizer, "longestTokenBytes">>;

/** Whose prompt for which item is rendered, to name both in errors. */
export interface PromptSite {
  agent: number;
  /** The item's dataset position; negative when not known. */
  itemIndex: number;
  /** The item itself, to name it by its id too. */
  item?: TaskItem | undefined;
  /** How to name the item when `item` is not given (default "item <itemIndex>"). */
  itemName?: string | undefined;
}

/**
 * A chat-message prompt that an agent could not render: its tokenizer has no chat template, or
 * the template failed on the messages. A FormatterError, as the prompt is what has to change.
 */
export class ChatTemplateError extends FormatterError {
  override name = "ChatTemplateError";

  constructor(
    message: string,
    readonly agent: number,
    /** The item's dataset position; negative when not known. */
    readonly itemIndex: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Chat messages for an agent whose tokenizer has no chat template. */
  static missing(site: PromptSite): ChatTemplateError {
    const a = site.agent;
    return new ChatTemplateError(
      `${promptItemName(site)}: agent ${a}'s prompt is a list of chat messages, but agent ${a}'s tokenizer has no chat template (no chat_template.jinja, nor chat_template in tokenizer_config.json) to render it with; pass a formatter that returns the prompt as a string, or use a checkpoint whose tokenizer has a chat template`,
      a,
      site.itemIndex,
    );
  }

  /** The template failed on the messages: `problem` says how (what it threw, or that it ran out of time or memory). */
  static failed(site: PromptSite, problem: string, cause?: unknown): ChatTemplateError {
    const a = site.agent;
    return new ChatTemplateError(
      `${promptItemName(site)}: agent ${a}'s chat template failed on the prompt's messages: ${problem}; change the messages (the item, or its formatter) to what the template accepts, or pass a formatter that returns the prompt as a string`,
      a,
      site.itemIndex,
      cause === undefined ? undefined : { cause },
    );
  }
}

/** How errors name the item of a prompt site: "item 3 (id "x")", or the site's own name. */
export function promptItemName(site: PromptSite): string {
  if (site.item !== undefined) return describeItem({ item: site.item, itemIndex: site.itemIndex });
  return site.itemName ?? (site.itemIndex < 0 ? "an item" : `item ${site.itemIndex}`);
}

/**
 * The prompt as text: a string as it is; chat messages rendered with the agent's chat template
 * and add_generation_prompt=true (apply_chat_template(tokenize=False)). This text is what
 * rewards receive and pair records store as the agent's prompt.
 */
export function renderPrompt(tokenizer: PromptTokenizer, prompt: Prompt, site: PromptSite): string {
  if (!isChatPrompt(prompt)) return prompt;
  if (tokenizer.chatTemplate === undefined) throw ChatTemplateError.missing(site);
  try {
    return tokenizer.applyChatTemplate([...prompt] as ChatMessage[], { addGenerationPrompt: true });
  } catch (err) {
    throw ChatTemplateError.failed(site, errorMessage(err), err);
  }
}

/**
 * A text prompt's ids: the tokenizer's special tokens added (as CoMLRL's `tokenizer(prompt)`),
 * except those the text already starts with. Text rendered from a chat template (by a formatter
 * itself, or handed as text to a comparator) holds its own BOS; adding one again would double it.
 */
export function encodePromptText(tokenizer: Pick<Tokenizer, "encode" | "specialTokens">, text: string): number[] {
  const full = tokenizer.encode(text);
  // Most texts start with no special token: skip the second encoding (long datasets are encoded
  // for the memory and context checks before a run).
  if (!Object.values(tokenizer.specialTokens).some((t) => t !== "" && text.startsWith(t))) return full;
  const body = tokenizer.encode(text, { addSpecialTokens: false });
  const added = full.length - body.length;
  if (added <= 0) return full;
  // The post-processor puts special tokens around the text's own: find where the text sits.
  for (let start = 0; start <= added; start++) {
    if (!body.every((id, i) => full[start + i] === id)) continue;
    const prefix = full.slice(0, start);
    const doubled = start > 0 && prefix.every((id, i) => body[i] === id);
    return doubled ? [...body, ...full.slice(start + body.length)] : full;
  }
  return full;
}

/** A prompt's text (see {@link renderPrompt}) and the ids an agent generates from. */
export interface EncodedPrompt {
  text: string;
  ids: number[];
}

/**
 * The ids of a prompt's text: text rendered from chat messages tokenized without adding special
 * tokens (transformers' apply_chat_template(tokenize=True)), a text prompt as
 * {@link encodePromptText}. With `limits`, a text too long in bytes for the model's context is
 * refused or cut before it is tokenized (see promptTextToEncode).
 */
export function encodeRenderedPrompt(
  tokenizer: Pick<PromptTokenizer, "encode" | "specialTokens" | "longestTokenBytes">,
  text: string,
  fromChat: boolean,
  site: PromptSite,
  limits?: PromptLimits,
): number[] {
  const within = limits === undefined ? text : promptTextToEncode(text, tokenizer.longestTokenBytes, limits, { ...site, itemName: promptItemName(site) });
  return fromChat ? tokenizer.encode(within, { addSpecialTokens: false }) : encodePromptText(tokenizer, within);
}

/**
 * The ids agent `site.agent` generates from: chat messages rendered with its template and
 * tokenized without adding special tokens (transformers' apply_chat_template(tokenize=True));
 * text as {@link encodePromptText}. `limits`: see {@link encodeRenderedPrompt}.
 */
export function encodePrompt(tokenizer: PromptTokenizer, prompt: Prompt, site: PromptSite, limits?: PromptLimits): EncodedPrompt {
  const text = renderPrompt(tokenizer, prompt, site);
  return { text, ids: encodeRenderedPrompt(tokenizer, text, isChatPrompt(prompt), site, limits) };
}
