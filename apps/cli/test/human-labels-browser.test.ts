// `pbrl train preference_labeler=human` end to end in headless Chromium: two people label a real
// madpo_iter run with the keyboard at once, the round files hold exactly their picks (winner and
// loser through the shown order), the agents train on them, and `pbrl report` shows them. The
// comparator is an OpenAI-format server on loopback whose answers try to inject HTML, so the page
// and the report are checked against hostile model text too. Screenshots of the page and the
// report's section go to test-output/human-labels/ (to look at).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLabels } from "@pbrl/human-labels";
import { readRoundFile } from "@pbrl/preference-data";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { main, type CliIO } from "../src/index.js";
import { runCli } from "./capture.js";
import { startInjectingComparator, type InjectingComparator } from "./injecting-comparator.js";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = path.resolve(import.meta.dirname, "../test-output/human-labels");
// short enough to survive max_new_tokens; an alert would show up as a dialog
const INJECTION = "<script>alert(1)</script>";
const KEY_ENV = "PBRL_TEST_HUMAN_KEY";
const haveChromium = existsSync(CHROMIUM);
const required = process.env["PBRL_REQUIRE_CHROMIUM"] === "1";

let comparator: InjectingComparator;
beforeAll(async () => {
  comparator = await startInjectingComparator(INJECTION);
});
afterAll(() => comparator.close());

interface Seen {
  person: string;
  round: number;
  comparisonId: string;
  key: string;
  left: string[];
  right: string[];
}

describe.runIf(haveChromium || required)("people label a run in the browser", () => {
  it("two people pick with the keyboard: the round files are their picks, the agents train, the report shows them", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-human-browser-"));
    const items = ["The cat", "We drink", "A bird", "Snow falls"].map((text, i) => JSON.stringify({ id: `q${i}`, prompt: text }));
    writeFileSync(path.join(dir, "train.jsonl"), items.join("\n") + "\n");
    writeFileSync(path.join(dir, "reward.mjs"), "export function reward_func(c) { return c[0].map((a, j) => (a + c[1][j]).split('e').length - 1); }\n");
    const out = path.join(dir, "out");
    process.env[KEY_ENV] = "sk-human-test-key-000";
    let err = "";
    let stdout = "";
    const io: CliIO = { out: (t) => void (stdout += t), err: (t) => void (err += t), isTTY: false };
    let finished = false;
    const run = main(
      [
        "train",
        "trainer=madpo_iter",
        `agent_model=${TINY_LLAMA}`,
        `train_dataset=${path.join(dir, "train.jsonl")}`,
        `eval_dataset=${path.join(dir, "train.jsonl")}`,
        `reward_func=${path.join(dir, "reward.mjs")}`,
        `output_dir=${out}`,
        "preference_labeler=human",
        "num_iterations=2",
        "preference_num_candidates=2",
        "max_new_tokens=32",
        "temperature=1.0",
        "train_batch_size=2",
        "eval_interval=1",
        "eval_num_samples=2",
        "logging_steps=1",
        "comparator_policy=api",
        "comparator_api_format=openai",
        `comparator_api_url=${comparator.url}`,
        "comparator_api_model=tiny-remote",
        `comparator_api_key_env=${KEY_ENV}`,
        "verbose=false",
      ],
      io,
    ).finally(() => (finished = true));
    while (!/label at (\S+)/.test(err) && !finished) await new Promise((r) => setTimeout(r, 50));
    const link = /label at (\S+)/.exec(err)?.[1];
    expect(link, err).toBeDefined();
    const url = new URL(link!);
    expect(url.hostname).toBe("127.0.0.1");
    // the page needs its token: none, a wrong one, and a cross-site write are refused
    expect((await fetch(new URL("/", url))).status).toBe(401);
    expect((await fetch(new URL("/?token=wrong", url))).status).toBe(403);
    const crossSite = await fetch(new URL("/api/label", url), {
      method: "POST",
      headers: { "x-pbrl-token": url.searchParams.get("token")!, "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ leaseId: "x", annotator: "mallory", verdict: "left" }),
    });
    expect(crossSite.status).toBe(403);

    const { chromium } = await import("playwright-core");
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    const problems: string[] = [];
    const seen: Seen[] = [];
    try {
      const open = async (name: string): Promise<Page> => {
        // a context each: two people with their own storage, as on two machines
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const page = await context.newPage();
        // A refused connection means nothing listens: the run has ended and closed its page's server
        // (a poll can land after that, before the browser closes). A reset or anything else is a fault.
        page.on("console", (m) => m.type() === "error" && !m.text().includes("net::ERR_CONNECTION_REFUSED") && problems.push(`${name}: ${m.text()}`));
        page.on("pageerror", (e) => problems.push(`${name}: ${e.message}`));
        page.on("dialog", (d) => (problems.push(`dialog: ${d.message()}`), void d.dismiss()));
        page.on("request", (r) => !r.url().startsWith(url.origin) && !r.url().startsWith("data:") && problems.push(`network request: ${r.url()}`));
        await page.goto(url.href);
        await page.locator("#name:focus").waitFor();
        await page.keyboard.type(name);
        await page.keyboard.press("Enter");
        return page;
      };
      const people: [Page, string, string[]][] = [
        [await open("ana"), "ana", ["1", "1", "3", "1"]],
        [await open("bo"), "bo", ["2", "4", "2", "2"]],
      ];
      let shot = false;
      while (!finished) {
        let picked = false;
        for (const [page, name, keys] of people) {
          if (!(await page.locator("#comparison").isVisible())) continue;
          const lease = (await page.getAttribute("#comparison", "data-lease"))!;
          const comparisonId = (await page.getAttribute("#comparison", "data-comparison"))!;
          const left = await page.locator("#left .parts pre").allTextContents();
          const right = await page.locator("#right .parts pre").allTextContents();
          if (!shot && [...left, ...right].some((t) => t.includes(INJECTION))) {
            // the injected answer is on the page as text, and ran nothing
            expect(await page.locator("main script, main img").count()).toBe(0);
            mkdirSync(SHOTS, { recursive: true });
            await page.screenshot({ path: path.join(SHOTS, "label-page.png"), fullPage: true });
            shot = true;
          }
          const nth = seen.filter((s) => s.person === name).length;
          const key = keys[nth % keys.length]!;
          if (name === "ana" && nth === 0) {
            // a rationale: typed keys write text, they do not pick
            await page.keyboard.press("r");
            await page.keyboard.type("2 words: left reads better");
            await page.keyboard.press("Escape");
            expect(await page.getAttribute("#comparison", "data-lease")).toBe(lease);
          }
          await page.keyboard.press(key);
          await page.waitForSelector(`#comparison:not([data-lease="${lease}"]), #done:not([hidden]), #finished:not([hidden])`);
          expect(await page.locator("#message").textContent()).toBe("saved");
          seen.push({ person: name, round: Number(comparisonId.slice(1, 5)), comparisonId, key, left, right });
          picked = true;
        }
        if (!picked) await new Promise((r) => setTimeout(r, 100));
      }
      expect(shot, JSON.stringify(seen, null, 1)).toBe(true);
      // the last pick of the last round: its page says the labelling is over
      expect(await Promise.all(people.map(([page]) => page.locator("#finished").isVisible()))).toContain(true);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
    delete process.env[KEY_ENV];
    expect(await run, err).toBe(0);

    // 4 items × 1 comparison × 2 rounds, each seen by one person only, both people at work
    expect(seen).toHaveLength(8);
    expect(new Set(seen.map((s) => s.comparisonId)).size).toBe(8);
    expect(new Set(seen.map((s) => s.person))).toEqual(new Set(["ana", "bo"]));
    for (const round of [1, 2]) {
      const picks = seen.filter((s) => s.round === round);
      const labels = await readLabels(path.join(out, "human_labels"), round);
      expect(labels.map((l) => [l.comparison_id, l.annotator]).sort()).toEqual(picks.map((p) => [p.comparisonId, p.person]).sort());
      const file = await readRoundFile(path.join(out, "preference_replay", `iteration_000${round}.json`));
      expect(file.scorer).toBe("human");
      const expected = picks
        .filter((p) => p.key === "1" || p.key === "2")
        .map((p) => JSON.stringify(p.key === "1" ? [p.left, p.right] : [p.right, p.left]))
        .sort();
      expect(file.pairs.map((r) => JSON.stringify([r.winner_completions, r.loser_completions])).sort()).toEqual(expected);
      for (const r of file.pairs) expect(r["annotators"]).toEqual([picks.find((p) => p.comparisonId === r["comparison_id"])!.person]);
    }
    // the agents trained on round 1's picks
    const metrics = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(metrics.filter((m) => m["kind"] === "train" && m["round"] === 1 && Number.isFinite(m["loss"])).length).toBeGreaterThan(0);
    const firstPick = seen.find((s) => s.person === "ana")!;
    const rationale = (await readLabels(path.join(out, "human_labels"), firstPick.round)).find((l) => l.comparison_id === firstPick.comparisonId)!.rationale;
    expect(rationale).toBe("2 words: left reads better");

    const made = await runCli(["report", out]);
    expect(made.code, made.err).toBe(0);
    const reportFile = path.join(out, "report.html");
    expect(readFileSync(reportFile, "utf8")).not.toContain(INJECTION);
    const reportBrowser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    try {
      const page = await reportBrowser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`file://${reportFile}`);
      const section = page.locator("section#human-labels");
      const text = await section.innerText();
      for (const name of ["ana", "bo"]) expect(text).toContain(name);
      // per round: comparisons labelled and labels, as the people made them
      for (const round of [1, 2]) expect(text).toMatch(new RegExp(`\\n${round}\\t4\\t4\\t`));
      expect(text).toContain("2 words: left reads better");
      mkdirSync(SHOTS, { recursive: true });
      await section.screenshot({ path: path.join(SHOTS, "report-human-labels.png") });
    } finally {
      await reportBrowser.close();
    }
  }, 600_000);
});
