/**
 * Child process entry: renders chat messages with an actor's chat template (chat-templates.ts). A
 * template that loops, or builds text or lists without end, stops only this process: the
 * trainer's keeps handling signals and its time limit, and when V8 gives up (out of memory, or an
 * array past its largest size, which abort a whole process, worker threads included) only this
 * one ends. It leaves signals to the trainer, and ends when the trainer does (its channel closes).
 */
import { Tokenizer, type ChatMessage } from "@pbrl/models";

/** Each actor's template and the special tokens it sees; null: the actor has none. */
export interface ChatTemplatesInit {
  type: "init";
  templates: ({ chatTemplate: string; specialTokens: Record<string, string> } | null)[];
}

export interface RenderRequest {
  type: "render";
  actor: number;
  messages: ChatMessage[];
}

export type RenderReply = { type: "ready" } | { type: "rendered"; text: string } | { type: "failed"; message: string };

const send = (reply: RenderReply) => process.send!(reply);
let renderers: (ReturnType<typeof Tokenizer.chatTemplateRenderer> | undefined)[] = [];

for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => {});
process.on("disconnect", () => process.exit(0));
process.on("message", (m: ChatTemplatesInit | RenderRequest) => {
  if (m.type === "init") {
    renderers = m.templates.map((t) => (t === null ? undefined : Tokenizer.chatTemplateRenderer(t.chatTemplate, t.specialTokens)));
    send({ type: "ready" });
    return;
  }
  try {
    const render = renderers[m.actor];
    if (render === undefined) throw new Error(`actor ${m.actor} has no chat template`);
    send({ type: "rendered", text: render(m.messages, { addGenerationPrompt: true }) });
  } catch (e) {
    send({ type: "failed", message: e instanceof Error ? e.message : String(e) });
  }
});
