/**
 * Every item's prompts as a run uses them, rendered once before it starts (the trainers render
 * every train and eval item's before output_dir is touched). Rounds read them here: no formatter
 * or chat template runs while a round is under way, where a stuck one could not be abandoned.
 */
import { describeItem } from "./describe.js";
import type { Formatter, TaskItem } from "./types.js";

/** One item's prompts, per actor (the model that answers it; one for every role when centralized). */
export interface RenderedItem {
  /** `texts[actor]`: the prompt as text, chat messages rendered with the actor's chat template. */
  texts: string[];
  /** `ids[actor]`: what the actor generates from, before max_prompt_length's cut. */
  ids: number[][];
  /** Each role's prompt as text, when one actor writes every role: what the task reward receives as `prompts`. */
  roleTexts?: string[];
}

export class PromptBook {
  private readonly byItem = new Map<TaskItem, RenderedItem>();
  private readonly byText: Map<string, readonly number[]>[] = [];

  /** Items are told apart by identity: the objects of the data sets the run was given. */
  has(item: TaskItem): boolean {
    return this.byItem.has(item);
  }

  add(item: TaskItem, rendered: RenderedItem): void {
    this.byItem.set(item, rendered);
    rendered.texts.forEach((text, a) => {
      const ids = (this.byText[a] ??= new Map());
      // Two items with one text have one encoding (the first); only a text prompt written exactly
      // as another item's chat template renders could differ, and would be encoded as the first.
      if (!ids.has(text)) ids.set(text, rendered.ids[a]!);
    });
  }

  get(item: TaskItem): RenderedItem {
    const rendered = this.byItem.get(item);
    if (rendered === undefined)
      throw new Error(
        `no prompt was rendered for ${describeItem({ item, itemIndex: -1 })}: a run renders its train and eval items' prompts before it starts, and uses no other items (a pbrl bug: please report it)`,
      );
    return rendered;
  }

  /** Per actor, a formatter that returns the item's rendered text: what collection, evaluation and rollouts format with once the book is filled. */
  formatters(actors: number): Formatter[] {
    return Array.from(
      { length: actors },
      (_, a): Formatter =>
        (item) =>
          this.get(item).texts[a]!,
    );
  }

  /** Actor `actor`'s ids by prompt text, for its sampler (Policy.renderedPrompts). */
  idsByText(actor: number): ReadonlyMap<string, readonly number[]> {
    return (this.byText[actor] ??= new Map());
  }
}
