// Reward modules run in a worker thread: a busy one never blocks the CLI's thread, a call longer
// than reward_timeout_s stops the worker with an error naming the module, the limit and the
// field, and a broken module is named with the place of its error.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { RewardContext, TaskItem } from "@pbrl/trainers";
import { startWorkerRewards } from "../src/reward/worker-rewards.js";

const dir = mkdtempSync(path.join(tmpdir(), "pbrl-reward-worker-"));
function module(name: string, source: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, source);
  return file;
}
const context: RewardContext = { item: { id: "a", topic: "cats" }, itemIndex: 0, prompts: ["p0", "p1"] };
const completions = [
  ["ab", "abcd"],
  ["x", "yy"],
];

describe("reward modules in a worker thread", () => {
  it("returns reward_func's numbers, applies reward_processor there, and carries reward_range", async () => {
    const file = module(
      "ok.mjs",
      "export function reward_func(c, ctx) { return c[0].map((a, j) => a.length + c[1][j].length + (ctx.item.topic === 'cats' ? 100 : 0)); }\nreward_func.reward_range = [0, 200];\nexport const reward_processor = (r) => r / 2;\n",
    );
    const w = await startWorkerRewards({ rewardModule: file, timeoutS: 10 });
    try {
      const raw = await w.rewardFunc(completions, context);
      expect(raw).toEqual([103, 106]);
      expect(raw.map((v) => w.rewardProcessor!(v))).toEqual([51.5, 53]);
      expect((w.rewardFunc as { reward_range?: unknown }).reward_range).toEqual([0, 200]);
    } finally {
      await w.close();
    }
  });

  it("a reward_processor module alone processes a built-in reward's values", async () => {
    const proc = module("proc.mjs", "export default (r) => { if (r < 0) throw new Error('negative'); return r * 10; };\n");
    const w = await startWorkerRewards({ builtin: (c) => c[0]!.map((_, j) => j - 0.5), processorModule: proc, timeoutS: 10 });
    try {
      const raw = await w.rewardFunc(completions, context);
      expect(raw).toEqual([-0.5, 0.5]);
      expect(w.rewardProcessor!(0.5)).toBe(5);
      expect(() => w.rewardProcessor!(-0.5)).toThrow(/^negative$/);
    } finally {
      await w.close();
    }
  });

  it("a reward that never returns is stopped after reward_timeout_s, and this thread stays free meanwhile", async () => {
    const file = module("busy.mjs", "export const reward_func = () => { for (;;) {} };\n");
    const w = await startWorkerRewards({ rewardModule: file, timeoutS: 0.5 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    try {
      await expect(w.rewardFunc(completions, context)).rejects.toThrow(
        new RegExp(
          `reward_func in ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} did not return within reward_timeout_s=0\\.5 s, so its worker thread was stopped`,
        ),
      );
      expect(ticks).toBeGreaterThan(5);
      await expect(w.rewardFunc(completions, context)).rejects.toThrow(/reward_timeout_s=0\.5/);
    } finally {
      clearInterval(timer);
      await w.close();
    }
  });

  it("close() stops a busy worker at once", async () => {
    const file = module("busy2.mjs", "export const reward_func = () => { for (;;) {} };\n");
    const w = await startWorkerRewards({ rewardModule: file, timeoutS: null });
    const call = expect(w.rewardFunc(completions, context)).rejects.toThrow(/closed/);
    const start = Date.now();
    await w.close();
    await call;
    expect(Date.now() - start).toBeLessThan(5000);
  });

  it("an error thrown by reward_func, and a value that cannot cross back, are errors of the call", async () => {
    const throws = module("throws.mjs", "export const reward_func = () => { throw new Error('judge unavailable'); };\n");
    const a = await startWorkerRewards({ rewardModule: throws, timeoutS: 10 });
    await expect(a.rewardFunc(completions, context)).rejects.toThrow(/judge unavailable/);
    await a.close();
    const fn = module("fn.mjs", "export const reward_func = () => [() => 1, 2];\n");
    const b = await startWorkerRewards({ rewardModule: fn, timeoutS: 10 });
    await expect(b.rewardFunc(completions, context)).rejects.toThrow(/cannot be sent back from the reward worker thread/);
    await b.close();
  });

  it("names a module with a syntax error with its line and column, and one that exports no reward_func", async () => {
    const bad = module("syntax.mjs", "export function reward_func(c) {\n  return c[0].map((x) => x.length;\n}\n");
    await expect(startWorkerRewards({ rewardModule: bad, timeoutS: 10 })).rejects.toThrow(
      `reward_func: ${bad} has a syntax error at ${bad}:2:28: missing ) after argument list`,
    );
    const top = module("top.mjs", "const table = JSON.parse('{oops');\nexport const reward_func = () => table;\n");
    await expect(startWorkerRewards({ rewardModule: top, timeoutS: 10 })).rejects.toThrow(
      new RegExp(`importing .*top\\.mjs failed: SyntaxError: .*\\(at .*top\\.mjs:1:\\d+\\)`),
    );
    const none = module("none.mjs", "export const reward = () => [1];\n");
    await expect(startWorkerRewards({ rewardModule: none, timeoutS: 10 })).rejects.toThrow(
      /none\.mjs exports no function named reward_func \(or a default export\)/,
    );
  });

  it("a formatters module runs there too: one shared function or a list; what a formatter returns crosses as data", async () => {
    const list = module("formatters.mjs", "export const formatters = [(x) => `Left: ${x.topic}`, (x) => [{ role: 'user', content: x.topic }]];\n");
    const w = await startWorkerRewards({ builtin: (c) => c[0]!.map(() => 1), formattersModule: list, timeoutS: 10 });
    try {
      const f = w.formatters as ((item: TaskItem) => Promise<unknown>)[];
      expect(f).toHaveLength(2);
      expect(await f[0]!({ topic: "cats" })).toBe("Left: cats");
      expect(await f[1]!({ topic: "cats" })).toEqual([{ role: "user", content: "cats" }]);
      expect(await w.rewardFunc(completions, context)).toEqual([1, 1]);
    } finally {
      await w.close();
    }
    const shared = module("shared.mjs", "export default (x) => `About ${x.topic}`;\n");
    const v = await startWorkerRewards({ builtin: (c) => c[0]!.map(() => 1), formattersModule: shared, timeoutS: 10 });
    try {
      expect(await (v.formatters as (item: TaskItem) => Promise<unknown>)({ topic: "snow" })).toBe("About snow");
    } finally {
      await v.close();
    }
  });

  it("a formatter that never returns is stopped after reward_timeout_s, naming it, and this thread stays free meanwhile", async () => {
    const file = module("busy-formatter.mjs", "export const formatters = [(x) => x.topic, (x) => { for (;;) {} }];\n");
    const w = await startWorkerRewards({ builtin: (c) => c[0]!.map(() => 1), formattersModule: file, timeoutS: 0.5 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    try {
      const f = w.formatters as ((item: TaskItem) => Promise<unknown>)[];
      await expect(f[1]!({ topic: "cats" })).rejects.toThrow(
        `formatters[1] in ${file} did not return within reward_timeout_s=0.5 s, so its worker thread was stopped`,
      );
      expect(ticks).toBeGreaterThan(5);
    } finally {
      clearInterval(timer);
      await w.close();
    }
  });

  it("a formatters module that exports none, or whose top-level code never ends, is named", async () => {
    const none = module("no-formatters.mjs", "export const format = (x) => x.topic;\n");
    await expect(startWorkerRewards({ builtin: () => [1], formattersModule: none, timeoutS: 10 })).rejects.toThrow(
      `formatters: ${none} exports no function or list of functions named formatters (or a default export)`,
    );
    const loops = module("loops-at-load.mjs", "for (;;) {}\nexport const formatters = (x) => x.topic;\n");
    await expect(startWorkerRewards({ builtin: () => [1], formattersModule: loops, timeoutS: 0.5 })).rejects.toThrow(
      `loading ${loops} took longer than reward_timeout_s=0.5 s`,
    );
  });
});
