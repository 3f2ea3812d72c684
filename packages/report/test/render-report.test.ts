import { afterAll, describe, expect, it } from "vitest";
import { readRun, renderReport, REPORT_SECTIONS, GENERATOR_META } from "../src/index.js";
import { assertBalanced, count, DEAD_PID, EVIL, removeTempDirs, sectionOf, tempDir, THIS_HOST, writeBaseRun, writeIterRun } from "./fixtures.js";

afterAll(removeTempDirs);

/** Every "http" in the page must sit inside escaped user text, i.e. in a config value cell. */
function urlsOutsideUserText(html: string): string[] {
  const withoutUserText = html.replace(/<td>[^<]*<\/td>/g, "").replace(/<pre>[^<]*<\/pre>/g, "");
  return withoutUserText.match(/https?:\/\/\S{0,40}/g) ?? [];
}

describe("renderReport on a finished iterative MADPO run", async () => {
  const dir = await tempDir();
  await writeIterRun(dir, {
    trainer: "madpo_iter",
    numIterations: 3,
    roundsWritten: 3,
    checkpointRound: 3,
    agentsSaved: true,
    evil: true,
    config: { comparator_api_url: "https://api.example.com/v1?key=[REDACTED]" },
  });
  const run = await readRun(dir);
  const html = renderReport(run);

  it("is one well-formed page with every section, marked as pbrl's", () => {
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain(GENERATOR_META);
    assertBalanced(html);
    for (const s of REPORT_SECTIONS) expect(html).toContain(`<section id="${s.id}">`);
    expect(count(html, "<section id=")).toBe(REPORT_SECTIONS.length);
  });

  it("loads nothing from anywhere: no script, no URL outside escaped user text", () => {
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<link|<img|src=|url\(/i);
    expect(urlsOutsideUserText(html)).toEqual([]);
    expect(html).toContain("https://api.example.com/v1?key=[REDACTED]");
  });

  it("shows a completion holding a script tag as text", () => {
    expect(html).not.toContain(EVIL);
    expect(html).toContain("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;");
  });

  it("plots the eval reward before and after training, one point per evaluation", () => {
    const s = sectionOf(html, "eval");
    expect(count(s, "<circle data-point")).toBe(2);
    expect(s).toContain("Before training: 0.5. Latest (after 9 updates): 0.7 (+0.2).");
  });

  it("plots loss, joint accuracy and the margins per agent, one point per update", () => {
    const s = sectionOf(html, "training");
    expect(s).toContain("Training (MADPO)");
    // loss, accuracy (joint), margin (joint + 2 agents), turn_1/reward_mean, turn_1/expected_return
    expect(count(s, `data-chart="line"`)).toBe(5);
    expect(count(s, "<circle data-point")).toBe(9 * (1 + 1 + 3 + 1 + 1));
    expect(s).toContain('data-series="agent_1"');
    // rounds 2 and 3 start at updates 4 and 7
    expect(count(s, ">r2<")).toBe(5);
    expect(count(s, ">r3<")).toBe(5);
  });

  it("tabulates and plots the rounds, with a gap for a NaN win rate", () => {
    const s = sectionOf(html, "rounds");
    expect(s).toContain("<td>1</td><td>5</td><td>5</td><td>5</td>");
    expect(s).toContain("Preference pairs per round");
    // new / in buffer / trained for 3 rounds, all non-zero
    const pairsChart = s.slice(s.indexOf("Preference pairs per round"), s.indexOf("</svg>", s.indexOf("Preference pairs per round")));
    expect(count(pairsChart, "<rect data-bar")).toBe(9);
    const winRate = s.slice(s.indexOf(`aria-label="comparator win rate"`), s.indexOf("</svg>", s.indexOf(`aria-label="comparator win rate"`)));
    expect(count(winRate, "<circle data-point")).toBe(2);
    // invalid candidates: only round 1's 2 target candidates
    const invalid = s.slice(s.indexOf("Invalid candidates per round"), s.indexOf("</svg>", s.indexOf("Invalid candidates per round")));
    expect(count(invalid, "<rect data-bar")).toBe(1);
    expect(s).toContain("Time per round");
  });

  it("draws every round's candidates and selected pairs on the same bins", () => {
    const s = sectionOf(html, "distributions");
    expect(count(s, `class="round-distribution"`)).toBe(3);
    expect(count(s, `data-chart="histogram"`)).toBe(6);
    expect(s).toMatch(/re-binned from its raw rewards/);
    // the x-axis tick labels are identical across all six charts
    const axes = [...s.matchAll(/<g class="ticks"[^]*?<\/g>/g)].map((m) =>
      m[0]
        .replace(/y="[^"]*"/g, "")
        .match(/text-anchor="middle">[^<]*</g)!
        .join(""),
    );
    expect(new Set(axes).size).toBe(1);
  });

  it("shows a few pairs per round with prompts", () => {
    const s = sectionOf(html, "samples");
    expect(count(s, `<details class="pair-set"`)).toBe(3);
    expect(count(s, `class="pair"`)).toBe(9);
    expect(s).toContain("Text: The captain packed rope number 0.\nSummary:");
  });

  it("says which sections do not apply", () => {
    expect(sectionOf(html, "reward-model")).toContain("MADPO learns from the pairs directly");
    expect(sectionOf(html, "pairs")).toContain("Iterative trainers collect pairs every round");
  });

  it("gives the same bytes for the same run", async () => {
    expect(renderReport(await readRun(dir))).toBe(html);
  });

  it("puts timings in the overview", () => {
    const s = sectionOf(html, "overview");
    expect(s).toContain("2025-01-01T00:00:02.500Z");
    expect(s).toContain("compute time");
    expect(s).toContain("finished: 3 of 3 rounds, agents saved");
  });
});

describe("renderReport on iterative MARLHF", async () => {
  const dir = await tempDir();
  await writeIterRun(dir, {
    trainer: "marlhf_iter",
    numIterations: 4,
    roundsWritten: 3,
    checkpointRound: 2,
    agentsSaved: false,
    halfLine: true,
    lock: { pid: DEAD_PID, host: THIS_HOST },
    declaredRange: [0, 2],
  });
  const html = renderReport(await readRun(dir));

  it("plots the reward model's fits and its held-out accuracy per round", () => {
    const s = sectionOf(html, "reward-model");
    expect(s).toContain("Reward-model accuracy per round");
    // 3 fits × 2 epochs, one point each, for loss, accuracy, margin and num_pairs
    const loss = s.slice(s.indexOf(`aria-label="reward/loss"`), s.indexOf("</svg>", s.indexOf(`aria-label="reward/loss"`)));
    expect(count(loss, "<circle data-point")).toBe(6);
    const perRound = s.slice(s.indexOf("Reward-model accuracy per round"), s.indexOf("</svg>", s.indexOf("Reward-model accuracy per round")));
    // training accuracy for rounds 1–3; held-out for the models of rounds 1 and 2 (logged in rounds 2 and 3)
    expect(count(perRound, "<circle data-point")).toBe(5);
    expect(s).toContain("<td>1</td><td>5</td><td>0.6</td><td>70.0%</td><td>59.0%</td><td>6</td>");
  });

  it("plots every RL series the run logged, per-agent keys together", () => {
    const s = sectionOf(html, "training");
    expect(s).toContain("Policy learning (RL against the reward model)");
    for (const title of ["turn_1/reward_mean", "loss", "advantage_mean", "reference_kl_mean", "logprob_mean", "turn_1/expected_return", "rl/advantage_std"])
      expect(s).toContain(`aria-label="${title}"`);
  });

  it("uses the declared range as the shared bins and says the run stopped mid-round", () => {
    expect(sectionOf(html, "distributions")).toContain("16 bins on [0, 2]. Every round&#39;s file has this range");
    const o = sectionOf(html, "overview");
    expect(o).toContain("stopped after round 2 of 4 (killed: it left run.lock behind); round 3 was left unfinished");
    expect(o).toContain("half-written line");
  });
});

describe("renderReport on base runs and on missing data", () => {
  it("a MADPO run: preference data with the pairs' rewards, no rounds", async () => {
    const dir = await tempDir();
    await writeBaseRun(dir, { trainer: "madpo", pairs: 6, agentsSaved: true, evil: true });
    const html = renderReport(await readRun(dir));
    assertBalanced(html);
    const pairs = sectionOf(html, "pairs");
    expect(pairs).toContain("preference/num_pairs");
    expect(count(pairs, `data-chart="histogram"`)).toBe(1);
    expect(sectionOf(html, "rounds")).toContain("Base trainers collect their pairs once");
    expect(sectionOf(html, "distributions")).toContain("Base trainers write no per-round distributions");
    expect(sectionOf(html, "samples")).toContain("preference_pairs.json: 6 pairs, 3 shown");
    expect(html).not.toContain(EVIL);
    expect(sectionOf(html, "overview")).toContain("native (configured)");
  });

  it("a MARLHF run: reward-model epochs without rounds", async () => {
    const dir = await tempDir();
    await writeBaseRun(dir, { trainer: "marlhf", pairs: 4, agentsSaved: true });
    const html = renderReport(await readRun(dir));
    const s = sectionOf(html, "reward-model");
    expect(s).not.toContain("per round");
    expect(count(s, `data-chart="line"`)).toBe(4);
    expect(sectionOf(html, "training")).toContain(`aria-label="critic/value_loss"`);
  });

  it("a run with nothing but its config says what is missing in every section", async () => {
    const dir = await tempDir();
    const { writeFileSync } = await import("node:fs");
    const path = await import("node:path");
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ trainer: "marlhf_iter", num_iterations: 2 }));
    const html = renderReport(await readRun(dir));
    assertBalanced(html);
    expect(sectionOf(html, "eval")).toContain("No evaluation in metrics.jsonl yet");
    expect(sectionOf(html, "training")).toContain("No training records in metrics.jsonl yet");
    expect(sectionOf(html, "rounds")).toContain("No round has been logged or written yet");
    expect(sectionOf(html, "distributions")).toContain("No reward_distributions");
    expect(sectionOf(html, "reward-model")).toContain("No reward-model records");
    expect(sectionOf(html, "samples")).toContain("no pairs to show yet");
    expect(sectionOf(html, "overview")).toContain("nothing logged");
  });
});
