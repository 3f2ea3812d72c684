// report_to="tensorboard": a real run's metrics, round samples and reward histograms read back from its event files.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { MADPOIterTrainer, readEvents, tensorBoardDir, type TensorBoardEvent } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { untimedMetrics } from "./untimed-metrics.js";

const run = async (out: string, more: Record<string, unknown> = {}) => {
  const t = new MADPOIterTrainer({
    ...ITERATIVE_RUN,
    args: { ...ITERATIVE_RUN.args, num_iterations: 2, output_dir: out, verbose: false, report_to: "tensorboard", ...more },
  });
  await t.train();
  t.dispose();
};
const eventsOf = (out: string): TensorBoardEvent[] =>
  readdirSync(tensorBoardDir(out))
    .sort()
    .flatMap((f) => readEvents(path.join(tensorBoardDir(out), f)));

describe("report_to=tensorboard", () => {
  it("every numeric metric of metrics.jsonl is a scalar at its step; rounds add reward histograms and a samples table", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-tb-"));
    await run(out);
    const events = eventsOf(out);
    const scalars = new Map<string, [number, number][]>();
    for (const e of events)
      for (const v of e.values) if (v.simpleValue !== undefined) scalars.set(v.tag, [...(scalars.get(v.tag) ?? []), [e.step, v.simpleValue]]);
    const records = untimedMetrics(path.join(out, "metrics.jsonl"));
    for (const r of records) {
      for (const [k, v] of Object.entries(r)) {
        if (typeof v !== "number" || ["step", "epoch", "update"].includes(k)) continue;
        const point = scalars
          .get(k)
          ?.find(([s, x]) => s === r["step"] && (Number.isNaN(v) ? Number.isNaN(x) : Math.abs(x - Math.fround(v)) <= 1e-6 * Math.max(1, Math.abs(v))));
        expect(point, `${k} at step ${String(r["step"])}`).toBeDefined();
      }
    }
    expect([...scalars.keys()]).toEqual(expect.arrayContaining(["loss", "joint/accuracy", "iter/comparator_win_rate", "eval/turn_1/reward_mean"]));
    const hist = events.flatMap((e) => e.values.filter((v) => v.histogram !== undefined).map((v) => ({ step: e.step, tag: v.tag, num: v.histogram!.num })));
    expect(hist.filter((h) => h.tag === "reward_distribution/target")).toHaveLength(2);
    const dist = JSON.parse(readFileSync(path.join(out, "reward_distributions", "iteration_0001.json"), "utf8")) as {
      candidate: { target: { sample_count: number } };
    };
    expect(hist.find((h) => h.tag === "reward_distribution/target")!.num).toBe(dist.candidate.target.sample_count);
    const texts = events.flatMap((e) => e.values.filter((v) => v.pluginName === "text").map((v) => v.text![0]!));
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^\| prompts \| winner \| loser \|/);
    // a resumed run writes a new file that begins with a restart marker at the checkpoint's step
    await run(out, { num_iterations: 3, resume_from_checkpoint: true });
    expect(readdirSync(tensorBoardDir(out))).toHaveLength(2);
    expect(eventsOf(out).some((e) => e.sessionStatus === 1)).toBe(true);
  });
});
