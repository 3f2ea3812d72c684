// Two people label a round in headless Chromium with the keyboard alone: the picks land in the
// file mapped through the shown order, a completion holding markup shows as text and runs
// nothing, the page loads nothing from elsewhere, and a page left open across a restart says so.
// A screenshot goes to test/__screenshots__/ (to look at).
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { LabelLog, LabelRound, RESTART_MESSAGE, labelFilePath, seededOrder, startLabelServer, type LabelRecord, type RecordedVerdict } from "../src/index.js";
import { comparisons, tempDir } from "./helpers.js";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = path.resolve(import.meta.dirname, "__screenshots__");
const INJECTION = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
const haveChromium = existsSync(CHROMIUM);
const required = process.env["PBRL_REQUIRE_CHROMIUM"] === "1";
const KEY_VERDICT: Record<string, "left" | "right" | "tie" | "both_bad"> = { "1": "left", "2": "right", "3": "tie", "4": "both_bad" };

function stored(key: string, leftIs: "target" | "comparator"): RecordedVerdict {
  const v = KEY_VERDICT[key] as "left" | "right" | "tie" | "both_bad";
  if (v === "tie" || v === "both_bad") return v;
  return v === "left" ? leftIs : leftIs === "target" ? "comparator" : "target";
}

// chromium.launch makes a fresh profile folder of its own; two contexts keep two people's localStorage apart
async function launch(): Promise<Browser> {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  });
}

const suite = haveChromium || required ? describe : describe.skip; // skipped only when /usr/bin/chromium is missing
suite("the labelling page in a browser", () => {
  it("two annotators label a round with the keyboard; markup in a completion stays text", async () => {
    const dir = tempDir();
    const items = comparisons(4);
    (items[2] as (typeof items)[number]).target = [`target writer 2 ${INJECTION}`, "target critic 2"];
    const order = seededOrder(9);
    const round = new LabelRound({ comparisons: items, leftIsTarget: order, sink: new LabelLog(dir, 1) });
    const evalCurve = [
      { round: 0, value: 0.2 },
      { round: 1, value: 0.35 },
      { round: 2, value: 0.3 },
    ];
    let server = await startLabelServer({ round: () => round, status: () => ({ run: "browser-demo", round: 1, evalCurve }) });
    const origin = `http://127.0.0.1:${server.port}`;

    const browser = await launch();
    const problems: string[] = [];
    try {
      const open = async (name: string): Promise<Page> => {
        const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
        const page = await context.newPage();
        page.on("console", (m) => m.type() === "error" && problems.push(`${name}: ${m.text()}`));
        page.on("pageerror", (e) => problems.push(`${name}: ${e.message}`));
        page.on("dialog", (d) => (problems.push(`dialog: ${d.message()}`), void d.dismiss()));
        page.on("request", (r) => !r.url().startsWith(origin) && !r.url().startsWith("data:") && problems.push(`network request: ${r.url()}`));
        await page.goto(server.url);
        await page.locator("#name:focus").waitFor();
        await page.keyboard.type(name);
        await page.keyboard.press("Enter");
        await page.waitForSelector("#comparison:not([hidden])");
        return page;
      };
      const ada = await open("ada");
      const bo = await open("bo");
      const expected: Partial<LabelRecord>[] = [];
      const keys = ["1", "2", "3", "4"];
      let step = 0;
      let sawInjection = false;
      for (let turn = 0; turn < 6 && expected.length < 4; turn++) {
        for (const [page, name] of [
          [ada, "ada"],
          [bo, "bo"],
        ] as const) {
          if (await page.locator("#done").isVisible()) continue;
          const lease = (await page.getAttribute("#comparison", "data-lease")) as string;
          const comparisonId = (await page.getAttribute("#comparison", "data-comparison")) as string;
          const leftText = await page.locator("#left pre").first().textContent();
          const leftIs = leftText?.startsWith("target") === true ? "target" : "comparator";
          expect(leftIs).toBe(order(comparisonId) ? "target" : "comparator");
          const key = keys[step++ % keys.length] as string;
          if (comparisonId === "r1-c2") {
            sawInjection = true;
            const side = leftIs === "target" ? "#left" : "#right";
            await expect(page.locator(`${side} pre`).first().textContent()).resolves.toBe(`target writer 2 ${INJECTION}`);
            expect(await page.locator(`${side} pre`).first().isVisible()).toBe(true);
            expect(await page.evaluate(() => typeof (globalThis as { __pwned?: unknown }).__pwned)).toBe("undefined");
            expect(await page.locator("main script, main img").count()).toBe(0);
            // keys typed into the rationale box write text, they do not pick
            await page.keyboard.press("r");
            await page.keyboard.type("1 2 the left one is clearer");
            await page.keyboard.press("Escape");
            expect(await page.getAttribute("#comparison", "data-lease")).toBe(lease);
            await expect.poll(async () => (await page.getAttribute("#curve-line", "points"))?.split(" ").length).toBe(3);
            mkdirSync(SHOTS, { recursive: true });
            await page.screenshot({ path: path.join(SHOTS, "label-page.png"), fullPage: true });
          }
          await page.keyboard.press(key);
          await page.waitForSelector(`#comparison:not([data-lease="${lease}"]), #done:not([hidden])`);
          expect(await page.locator("#message").textContent()).toBe("saved");
          const record: Partial<LabelRecord> = { comparison_id: comparisonId, annotator: name, verdict: stored(key, leftIs), shown_left: leftIs };
          if (comparisonId === "r1-c2") record.rationale = "1 2 the left one is clearer";
          expected.push(record);
        }
      }
      expect(sawInjection).toBe(true);
      expect(expected.map((r) => r.comparison_id).sort()).toEqual(["r1-c0", "r1-c1", "r1-c2", "r1-c3"]);
      expect(new Set(expected.map((r) => r.annotator))).toEqual(new Set(["ada", "bo"]));
      for (const page of [ada, bo]) {
        await page.waitForSelector("#done:not([hidden])");
        await expect(page.locator("#done").textContent()).resolves.toContain("nothing to label now");
        await page.locator("#progress", { hasText: /^4 of 4 decided/ }).waitFor({ timeout: 10_000 });
      }
      const onDisk = readFileSync(labelFilePath(dir, 1), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as LabelRecord);
      expect(onDisk).toHaveLength(4);
      for (const want of expected) {
        const got = onDisk.find((r) => r.comparison_id === want.comparison_id);
        expect(got).toMatchObject({ ...want, scorer: "human" });
        expect(got?.winner).toBe(want.verdict === "target" || want.verdict === "comparator" ? want.verdict : null);
      }
      // the name is remembered
      await ada.reload();
      expect(await ada.inputValue("#name")).toBe("ada");
      expect(problems).toEqual([]);

      // the run restarts on the same port with a new token: the open page says what to do
      const port = server.port;
      await server.close();
      server = await startLabelServer({ port, round: () => round });
      await bo.locator("#message", { hasText: RESTART_MESSAGE }).waitFor({ timeout: 10_000 });
    } finally {
      await browser.close();
      await server.close();
    }
  });

  it("when the run's labelling is over the page says so and stops asking", async () => {
    let finished = false;
    const server = await startLabelServer({ round: () => null, status: () => ({ run: "browser-demo", ...(finished && { finished: true }) }) });
    const browser = await launch();
    const problems: string[] = [];
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 400 } })).newPage();
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      page.on("pageerror", (e) => problems.push(e.message));
      await page.goto(server.url);
      await page.locator("#name:focus").waitFor();
      await page.keyboard.type("ada");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#done:not([hidden])");
      finished = true;
      await page.waitForSelector("#finished:not([hidden])", { timeout: 10_000 });
      expect(await page.locator("#done").isHidden()).toBe(true);
      await expect(page.locator("#finished").textContent()).resolves.toContain("this run's labelling is over");
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SHOTS, "label-page-finished.png") });
      // neither the 5 s look for a new round nor the 3 s status poll asks again
      const asked: string[] = [];
      page.on("request", (r) => asked.push(r.url()));
      await page.waitForTimeout(5_500);
      expect(asked).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
      await server.close();
    }
  });
});
