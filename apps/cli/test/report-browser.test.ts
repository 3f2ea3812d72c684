// `pbrl report` of a small real run, opened in headless Chromium: no console errors, each chart
// holds as many points as the metrics have records, a completion holding `<script>` shows as
// text, and every section is saved as a screenshot under test-output/report/ (to look at).
// The run is a real iterative MADPO run whose comparator is an OpenAI-format server on loopback,
// which answers with text that tries to inject HTML.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPORT_SECTIONS } from "@pbrl/report";
import { runCli } from "./capture.js";
import { startInjectingComparator, type InjectingComparator } from "./injecting-comparator.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const CHROMIUM = "/usr/bin/chromium";
const TINY = TINY_LLAMA;
const SHOTS = path.resolve(import.meta.dirname, "../test-output/report");
const INJECTION = "<script>alert(1)</script>";
const KEY_ENV = "PBRL_TEST_REPORT_KEY";

const haveChromium = existsSync(CHROMIUM);
const required = process.env["PBRL_REQUIRE_CHROMIUM"] === "1";

let comparator: InjectingComparator;
beforeAll(async () => {
  comparator = await startInjectingComparator(INJECTION);
});
afterAll(() => comparator.close());

describe.runIf(haveChromium || required)("pbrl report in a browser", () => {
  it("renders a real run's report: sections, point counts, escaped completions, no console errors", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-report-"));
    const items = ["The cat", "We drink", "A bird", "Snow falls", "The river", "Old trees"].map((text, i) => JSON.stringify({ id: `q${i}`, prompt: text }));
    writeFileSync(path.join(dir, "train.jsonl"), items.join("\n") + "\n");
    // letter e's in the joint answer, declared range for log_reward_distribution
    writeFileSync(
      path.join(dir, "reward.mjs"),
      "export function reward_func(c) { return c[0].map((a, j) => Math.min(20, (a + c[1][j]).split('e').length - 1)); }\nreward_func.reward_range = [0, 20];\n",
    );
    const out = path.join(dir, "out");
    process.env[KEY_ENV] = "sk-report-test-key-000";
    const run = await runCli([
      "train",
      "trainer=madpo_iter",
      `agent_model=${TINY}`,
      `train_dataset=${path.join(dir, "train.jsonl")}`,
      `eval_dataset=${path.join(dir, "train.jsonl")}`,
      `reward_func=${path.join(dir, "reward.mjs")}`,
      `output_dir=${out}`,
      "num_iterations=2",
      "preference_num_candidates=4",
      "max_new_tokens=32",
      "temperature=1.0",
      "eval_interval=2",
      "eval_num_samples=3",
      "logging_steps=1",
      "log_reward_distribution=true",
      "comparator_policy=api",
      "comparator_api_format=openai",
      `comparator_api_url=${comparator.url}`,
      "comparator_api_model=tiny-remote",
      `comparator_api_key_env=${KEY_ENV}`,
      "verbose=false",
    ]);
    delete process.env[KEY_ENV];
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(/see the run: pbrl report /);
    const made = await runCli(["report", out]);
    expect(made.code, made.err).toBe(0);
    const file = path.join(out, "report.html");
    const html = readFileSync(file, "utf8");
    expect(html).not.toContain(INJECTION); // escaped in the file itself
    const metrics = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const evals = metrics.filter((m) => m["kind"] === "eval").length;
    const trains = metrics.filter((m) => m["kind"] === "train").length;
    expect(evals).toBeGreaterThanOrEqual(2);

    const { chromium } = await import("playwright-core");
    // a fresh profile folder each time (playwright passes it as --user-data-dir)
    const browser = await chromium.launchPersistentContext(mkdtempSync(path.join(tmpdir(), "pbrl-chromium-")), {
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
      viewport: { width: 1280, height: 900 },
    });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("dialog", (d) => (problems.push(`dialog: ${d.message()}`), void d.dismiss()));
      page.on("request", (r) => !r.url().startsWith("file:") && problems.push(`network request: ${r.url()}`));
      await page.goto(`file://${file}`);
      // every chart on the page, with the points (line charts) or non-empty bars it must draw
      const byKind = (kind: string) => metrics.filter((m) => m["kind"] === kind);
      const finite = (kind: string, keys: string[]) => byKind(kind).reduce((n, m) => n + keys.filter((k) => Number.isFinite(m[k])).length, 0);
      const bars = (values: number[]) => values.filter((v) => v !== 0 && Number.isFinite(v)).length;
      const rounds = byKind("round");
      const dist = (r: number) =>
        JSON.parse(readFileSync(path.join(out, "reward_distributions", `iteration_000${r}.json`), "utf8")) as Record<
          "candidate" | "selected",
          Record<"target" | "comparator", { counts: number[] }>
        >;
      const histBars = (r: number, which: "candidate" | "selected") => bars(dist(r)[which].target.counts) + bars(dist(r)[which].comparator.counts);
      const expected: Record<string, { points?: number; bars?: number }> = {
        "Evaluation reward (task reward)": { points: evals },
        loss: { points: finite("train", ["loss"]) },
        accuracy: { points: finite("train", ["joint/accuracy"]) },
        margin: { points: finite("train", ["joint/margin", "agent_0/margin", "agent_1/margin"]) },
        "turn_1/reward_mean": { points: finite("train", ["turn_1/reward_mean"]) },
        "turn_1/expected_return": { points: finite("train", ["turn_1/expected_return"]) },
        "Preference pairs per round": {
          bars: rounds.reduce(
            (n, m) =>
              n +
              bars(
                ["iter/current_preference_pairs", "iter/total_preference_pairs", "iter/train_preference_pairs", "iter/replayed_train_pairs"].map((k) =>
                  Number(m[k]),
                ),
              ),
            0,
          ),
        },
        "comparator win rate": { points: finite("round", ["iter/comparator_win_rate"]) },
        "Invalid candidates per round": {
          bars: rounds.reduce((n, m) => n + bars([Number(m["iter/invalid_target_candidates"]), Number(m["iter/invalid_comparator_candidates"])]), 0),
        },
        "Mean candidate reward per round": { points: finite("round", ["iter/target_reward_mean", "iter/comparator_reward_mean"]) },
        "Time per round": { bars: 2 },
        "Round 1: all candidates": { bars: histBars(1, "candidate") },
        "Round 1: selected pairs": { bars: histBars(1, "selected") },
        "Round 2: all candidates": { bars: histBars(2, "candidate") },
        "Round 2: selected pairs": { bars: histBars(2, "selected") },
      };
      const charts = await page.locator("svg[data-chart]").evaluateAll((els) =>
        els.map((e) => ({
          title: e.getAttribute("aria-label") ?? "",
          points: e.querySelectorAll("circle[data-point]").length,
          bars: e.querySelectorAll("rect[data-bar]").length,
        })),
      );
      expect(charts.map((c) => c.title).sort()).toEqual(Object.keys(expected).sort());
      for (const c of charts) {
        const want = expected[c.title]!;
        expect({ title: c.title, points: c.points, bars: c.bars }).toEqual({ title: c.title, points: want.points ?? 0, bars: want.bars ?? 0 });
      }
      expect(charts.find((c) => c.title === "loss")!.points).toBe(trains);
      // the injected completions are on the page as text, in the samples of every round
      const samples = await page.locator("section#samples").innerText();
      expect(samples).toContain(INJECTION);
      expect(await page.locator("section#samples script").count()).toBe(0);
      expect(await page.locator("section#distributions rect[data-bar]").count()).toBeGreaterThan(0);
      mkdirSync(SHOTS, { recursive: true });
      for (const s of REPORT_SECTIONS) {
        const el = page.locator(`section#${s.id}`);
        expect(await el.count(), s.id).toBe(1);
        await el.screenshot({ path: path.join(SHOTS, `${s.id}.png`) });
      }
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 600_000);
});
