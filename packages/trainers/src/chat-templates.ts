/**
 * Chat templates rendered where a stuck one can be abandoned: a child process
 * (chat-template-process.ts), started on the first chat prompt. A template comes with the model's
 * files and is a program (Jinja): one that loops on a prompt used to hold the trainer's thread, so
 * that no signal was handled, and one that built text or lists without end aborted the whole
 * process when V8 gave up. A worker thread's heap limit does not prevent that (a large allocation
 * past it, or an array past V8's largest, still aborts the process), so templates render in a
 * process of their own: each prompt has reward_timeout_s, the process a capped heap, and aborting
 * the run's start-up stops it at once. Each ends as an error naming the item and the agent.
 */
import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { timerDelayMs } from "@pbrl/core-tensor";
import { ChatTemplateError, type ChatMessage, type PromptSite, type PromptTokenizer } from "@pbrl/preference-data";
import type { ChatTemplatesInit, RenderReply, RenderRequest } from "./chat-template-process.js";

/** The heap a template's process may fill: far beyond what rendering a prompt takes (a 100 MB prompt included). */
export const CHAT_TEMPLATE_HEAP_MB = 1024;

/** What is kept of the process's stderr, for the line that says why V8 gave up. */
const STDERR_TAIL = 16_384;

/** Child processes run JavaScript: from the TypeScript sources (tests), the built copy is used. */
function processScript(): string {
  const here = fileURLToPath(new URL("./chat-template-process.js", import.meta.url));
  if (existsSync(here)) return here;
  const built = fileURLToPath(new URL("../dist/chat-template-process.js", import.meta.url));
  if (existsSync(built)) return built;
  throw new Error(`chat templates are rendered in a child process whose script is not built (${built}); run \`pnpm --filter @pbrl/trainers build\``);
}

/** V8's own words for why it ended a process ("Reached heap limit …", "invalid size error …"), from its stderr. */
function fatalLine(stderr: string): string | undefined {
  return /FATAL ERROR: ([^\n]+)|# (Fatal JavaScript [^\n]+)/
    .exec(stderr)
    ?.slice(1)
    .find((l) => l !== undefined);
}

interface Pending {
  site: PromptSite;
  resolve: (text: string) => void;
  reject: (err: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/** Renders chat prompts with each actor's template in one child process, one prompt at a time. */
export class ProcessChatTemplates {
  private child: ChildProcess | undefined;
  private ready: Promise<void> | undefined;
  /** Rejects `ready` while the process starts. */
  private failStart: ((err: Error) => void) | undefined;
  private pending: Pending | undefined;
  /** Why the process can no longer be used; every later render fails with it. */
  private ended: Error | undefined;
  private stderr = "";
  private readonly onAbort = () => {
    const reason: unknown = this.signal!.reason;
    this.end(reason instanceof Error ? reason : new Error(String(reason)));
  };

  constructor(
    private readonly tokenizers: readonly Pick<PromptTokenizer, "chatTemplate" | "specialTokens">[],
    /** reward_timeout_s: seconds one prompt may take to render; null: no limit. */
    private readonly timeoutS: number | null,
    /** Aborting it stops the process and fails the render in progress with its reason. */
    private readonly signal?: AbortSignal,
  ) {
    signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /** `messages` rendered with actor `site.agent`'s template (add_generation_prompt=true), as Tokenizer.applyChatTemplate renders them. */
  async render(messages: readonly ChatMessage[], site: PromptSite): Promise<string> {
    if (this.tokenizers[site.agent]?.chatTemplate === undefined) throw ChatTemplateError.missing(site);
    this.signal?.throwIfAborted();
    await this.start();
    if (this.ended !== undefined) throw this.ended;
    if (this.pending !== undefined) throw new Error("ProcessChatTemplates renders one prompt at a time");
    return new Promise<string>((resolve, reject) => {
      const p: Pending = { site, resolve, reject };
      // Timed from when the process has the prompt: its start (loading @pbrl/models) is not the template's time.
      if (this.timeoutS !== null) p.timer = setTimeout(() => this.timedOut(), timerDelayMs(this.timeoutS));
      this.pending = p;
      this.holdOpen(true);
      this.child!.send({ type: "render", actor: site.agent, messages: messages.map((m) => ({ ...m })) } satisfies RenderRequest);
    });
  }

  /** Stops the process; a render in progress fails. */
  close(): void {
    this.signal?.removeEventListener("abort", this.onAbort);
    this.end(new Error("the chat template process was closed"));
  }

  private start(): Promise<void> {
    this.ready ??= new Promise<void>((resolve, reject) => {
      this.failStart = reject;
      // Built JavaScript needs none of this process's Node options (the tests' source conditions, loaders).
      const child = fork(processScript(), [], {
        execArgv: [`--max-old-space-size=${CHAT_TEMPLATE_HEAP_MB}`],
        serialization: "advanced",
        stdio: ["ignore", "ignore", "pipe", "ipc"],
      });
      this.child = child;
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (d: string) => (this.stderr = (this.stderr + d).slice(-STDERR_TAIL)));
      child.on("message", (m: RenderReply) => {
        // Idle, it must not keep this process alive; render() refs it while an answer is awaited.
        if (m.type === "ready") {
          this.failStart = undefined;
          this.holdOpen(false);
          return resolve();
        }
        const p = this.settle();
        if (p === undefined) return;
        if (m.type === "rendered") p.resolve(m.text);
        else p.reject(ChatTemplateError.failed(p.site, m.message));
      });
      child.on("error", (e) => this.end(new Error(`the chat template process failed: ${e.message}`)));
      // "close": after its stderr has been read to the end, for the line that says why V8 gave up.
      child.on("close", (code, signal) => {
        const why = fatalLine(this.stderr) ?? `exit code ${code ?? signal}`;
        const site = this.pending?.site;
        this.end(
          site !== undefined
            ? ChatTemplateError.failed(site, `its process ended (${why}): a template that builds text or lists without end`)
            : new Error(`the chat template process ended (${why})`),
        );
      });
      const init: ChatTemplatesInit = {
        type: "init",
        templates: this.tokenizers.map((t) => (t.chatTemplate === undefined ? null : { chatTemplate: t.chatTemplate, specialTokens: { ...t.specialTokens } })),
      };
      child.send(init);
    });
    return this.ready;
  }

  /** Whether the process (and its channel) keep this one alive: only while an answer is awaited. */
  private holdOpen(hold: boolean): void {
    const channel = this.child?.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (hold) {
      this.child?.ref();
      channel?.ref?.();
    } else {
      this.child?.unref();
      channel?.unref?.();
    }
  }

  private timedOut(): void {
    const site = this.pending?.site;
    if (site === undefined) return;
    const t = this.timeoutS;
    this.end(
      ChatTemplateError.failed(
        site,
        `it did not finish within reward_timeout_s=${t} s, so its process was stopped (a template that loops); if it is only slow, raise reward_timeout_s (null: no limit)`,
      ),
    );
  }

  /** Takes the render in progress off the books (its timer cleared), for its caller to settle. */
  private settle(): Pending | undefined {
    const p = this.pending;
    this.pending = undefined;
    if (p?.timer !== undefined) clearTimeout(p.timer);
    this.holdOpen(false);
    return p;
  }

  /** Ends the process's use: the render in progress fails with `err`, and every later one. */
  private end(err: Error): void {
    if (this.ended !== undefined) return;
    this.ended = err;
    this.settle()?.reject(err);
    // While it starts, nothing else would settle the wait (an abort of the run's start-up lands here).
    this.failStart?.(err);
    this.child?.kill("SIGKILL");
  }
}
