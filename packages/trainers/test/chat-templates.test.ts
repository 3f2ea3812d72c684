// Issue 28: chat templates render in a process of their own (chat-templates.ts), so a template
// that loops, or runs out of memory, ends that process (or is stopped), never this one.
import { describe, expect, it } from "vitest";
import { ChatTemplateError } from "@pbrl/preference-data";
import { ProcessChatTemplates } from "../src/chat-templates.js";

const chat = (content: string) => [{ role: "user", content }];

describe("chat templates in a process of their own", () => {
  const site = { agent: 0, itemIndex: 4, itemName: "eval_dataset item 4" };
  const templates = (template: string, timeoutS: number | null = null, signal?: AbortSignal) =>
    new ProcessChatTemplates([{ chatTemplate: template, specialTokens: { bos_token: "<s>" } }], timeoutS, signal);

  it("renders as the tokenizer does", async () => {
    const t = templates("{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}{% endfor %}{% if add_generation_prompt %}>{% endif %}");
    try {
      expect(await t.render(chat("hi"), site)).toBe("<s>[user] hi>");
    } finally {
      t.close();
    }
  });

  it("a template that runs out of memory ends its process, not this one: a ChatTemplateError naming the item", async () => {
    const t = templates("{% for i in range(60000000) %}{% endfor %}");
    try {
      const err = await t.render(chat("hi"), site).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChatTemplateError);
      expect((err as Error).message).toMatch(
        /^eval_dataset item 4: agent 0's chat template failed on the prompt's messages: its process ended \((Reached heap limit|Fatal JavaScript)[^)]*\): a template that builds text or lists without end; /,
      );
    } finally {
      t.close();
    }
  });

  it("aborting stops a looping template at once, with the abort's reason", async () => {
    const abort = new AbortController();
    const t = templates("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", null, abort.signal);
    try {
      const rendering = t.render(chat("hi"), site).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 3000));
      const stop = new Error("stopped");
      const start = Date.now();
      abort.abort(stop);
      expect(await rendering).toBe(stop);
      expect(Date.now() - start).toBeLessThan(1000);
    } finally {
      t.close();
    }
  });
});
