import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HUMAN_LABELS_SECTION, readRun, renderReport, REPORT_SECTIONS, reportSections } from "../src/index.js";
import { assertBalanced, count, labelRecord, markRoundHuman, removeTempDirs, sectionOf, tempDir, writeIterRun, writeLabelFile } from "./fixtures.js";

afterAll(removeTempDirs);

const SCRIPT = "<script>alert(1)</script>";

/** The text of each row of the table that follows an <h3>, cell by cell. */
function rowsAfter(html: string, heading: string): string[][] {
  const start = html.indexOf(`<h3>${heading}</h3>`);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const body = html.slice(html.indexOf("<tbody>", start), html.indexOf("</tbody>", start));
  return [...body.matchAll(/<tr>(.*?)<\/tr>/g)].map((m) => [...m[1]!.matchAll(/<td>(.*?)<\/td>/g)].map((c) => c[1]!));
}

async function humanRun(): Promise<string> {
  const dir = await tempDir();
  await writeIterRun(dir, {
    trainer: "madpo_iter",
    numIterations: 2,
    roundsWritten: 2,
    checkpointRound: 2,
    agentsSaved: true,
    config: { preference_labeler: "human" },
  });
  markRoundHuman(dir, 1, 3);
  // round 1: item 0 both target (agree); item 1 comparator vs tie (no majority); item 2 one label
  writeLabelFile(dir, 1, [
    labelRecord(1, 0, "ana", "target", 0, "shorter and correct"),
    labelRecord(1, 0, "ben", "target", 1),
    labelRecord(1, 1, "ana", "comparator", 2, ""),
    labelRecord(1, 1, "ben", "tie", 3, "both fine"),
    labelRecord(1, 2, "ana", "both_bad", 4, "neither answers the question"),
  ]);
  // round 2: item 0 target, comparator, comparator (majority comparator, agreement 2/3)
  writeLabelFile(dir, 2, [
    labelRecord(2, 0, "ana", "target", 10),
    labelRecord(2, 0, "ben", "comparator", 11),
    labelRecord(2, 0, "cy", "comparator", 12, "the critic caught it"),
  ]);
  return dir;
}

describe("a run labelled by people", async () => {
  const dir = await humanRun();
  const run = await readRun(dir);
  const html = renderReport(run);
  const s = sectionOf(html, HUMAN_LABELS_SECTION.id);

  it("reads the label files by round, with @pbrl/human-labels' records", () => {
    expect(run.humanLabels?.dir).toBe(path.join(dir, "human_labels"));
    expect(run.humanLabels?.files.map((f) => [f.round, path.basename(f.file), f.records.length, f.error])).toEqual([
      [1, "round_0001.jsonl", 5, null],
      [2, "round_0002.jsonl", 3, null],
    ]);
    expect(run.files.find((f) => f.name === "human_labels")).toEqual({ name: "human_labels", found: true, detail: "2 label files, 8 labels" });
    expect(run.problems).toEqual([]);
  });

  it("reads the round file's scorer and who labelled each pair", () => {
    expect(run.rounds.map((r) => [r.scorer, r.numPairs, r.pairScorers])).toEqual([
      ["human", 5, { human: 3, task: 2 }],
      ["task", 6, {}],
    ]);
  });

  it("puts the section after Rounds, in the page and in the navigation", () => {
    assertBalanced(html);
    expect(reportSections(run).map((x) => x.id)).toEqual([
      "overview",
      "eval",
      "training",
      "pairs",
      "rounds",
      "human-labels",
      "distributions",
      "reward-model",
      "samples",
    ]);
    expect(count(html, "<section id=")).toBe(REPORT_SECTIONS.length + 1);
    expect(html.indexOf('<section id="rounds">')).toBeLessThan(html.indexOf('<section id="human-labels">'));
    expect(html.indexOf('<section id="human-labels">')).toBeLessThan(html.indexOf('<section id="distributions">'));
    expect(html).toContain('<a href="#human-labels">Human labels</a>');
    expect(sectionOf(html, "samples")).toContain("Round 1: 5 pairs, 3 shown, labelled by people (see Human labels)");
  });

  it("tabulates the picks per round, with the round file's pairs by who labelled them", () => {
    expect(rowsAfter(s, "Picks per round")).toEqual([
      ["1", "3", "5", "2", "1", "1", "1", "3 human, 2 task"],
      ["2", "1", "3", "1", "2", "0", "0", "6"],
    ]);
  });

  it("tabulates each annotator's shares and agreement with the majority", () => {
    // ana: target ×2, comparator, both bad; with a majority on r1 item 0 (agrees) and r2 item 0 (does not)
    // ben: target, tie, comparator; agrees on both; cy: comparator, agrees
    expect(rowsAfter(s, "Annotators")).toEqual([
      ["ana", "4", "50.0%", "25.0%", "0.0%", "25.0%", "50.0% (1 of 2)"],
      ["ben", "3", "33.3%", "33.3%", "33.3%", "0.0%", "100.0% (2 of 2)"],
      ["cy", "1", "0.0%", "100.0%", "0.0%", "0.0%", "100.0% (1 of 1)"],
    ]);
  });

  it("gives the mean agreement over comparisons labelled twice or more", () => {
    // (1 + 1/2 + 2/3) / 3 = 0.7222…
    expect(rowsAfter(s, "Agreement")).toEqual([["3", "72.2%"]]);
  });

  it("shows the latest rationales with annotator, round and verdict; blank ones are skipped", () => {
    expect(rowsAfter(s, "Rationales").map((r) => r.slice(0, 4).concat(r[4]!.replace(/<\/?pre>/g, "")))).toEqual([
      ["2026-12-07T02:12:00.000Z", "2", "cy", "comparator", "the critic caught it"],
      ["2026-12-07T02:04:00.000Z", "1", "ana", "both bad", "neither answers the question"],
      ["2026-12-07T02:03:00.000Z", "1", "ben", "tie", "both fine"],
      ["2026-12-07T02:00:00.000Z", "1", "ana", "target", "shorter and correct"],
    ]);
  });

  it("gives the same bytes for the same run", async () => {
    expect(renderReport(await readRun(dir))).toBe(html);
  });
});

describe("human labels that are odd or damaged", () => {
  it("shows a rationale and an annotator holding a script tag as text", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 1, roundsWritten: 1, checkpointRound: 1, agentsSaved: true });
    writeLabelFile(dir, 1, [labelRecord(1, 0, SCRIPT, "comparator", 0, SCRIPT), labelRecord(1, 0, "ana", "comparator", 1)]);
    const html = renderReport(await readRun(dir));
    assertBalanced(html);
    expect(html).not.toMatch(/<script/i);
    const s = sectionOf(html, "human-labels");
    // once as the annotator in the annotators table, once as annotator and once as rationale in the rationales
    expect(count(s, "&lt;script&gt;alert(1)&lt;/script&gt;")).toBe(3);
    expect(rowsAfter(s, "Rationales")).toEqual([
      ["2026-12-07T02:00:00.000Z", "1", "&lt;script&gt;alert(1)&lt;/script&gt;", "comparator", "<pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre>"],
    ]);
  });

  it("names a malformed label file's file and line in the section and keeps the rest of the report", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 2, roundsWritten: 2, checkpointRound: 2, agentsSaved: true });
    writeLabelFile(dir, 1, [labelRecord(1, 0, "ana", "target", 0, "fine"), labelRecord(1, 1, "ana", "tie", 1)]);
    const bad = writeLabelFile(
      dir,
      2,
      [
        JSON.stringify(labelRecord(2, 0, "ana", "target", 2)),
        `{"comparison_id":"x","note":"not a label"}`,
        JSON.stringify(labelRecord(2, 1, "ana", "target", 3)),
        "",
      ].join("\n"),
    );
    const run = await readRun(dir);
    expect(run.humanLabels?.files.map((f) => [f.round, f.records.length])).toEqual([
      [1, 2],
      [2, 0],
    ]);
    const error = run.humanLabels?.files[1]?.error ?? "";
    expect(error.startsWith(`${bad}:2: not a label record:`)).toBe(true);
    expect(run.problems).toEqual([`${error}; round 2's labels are left out`]);
    const html = renderReport(run);
    assertBalanced(html);
    const s = sectionOf(html, "human-labels");
    expect(s).toContain(`<ul class="problems"><li>${bad}:2: not a label record:`);
    expect(rowsAfter(s, "Picks per round")).toEqual([
      ["1", "2", "2", "1", "0", "1", "0", "5"],
      ["2", "unreadable", "—", "—", "—", "—", "—", "6"],
    ]);
    expect(rowsAfter(s, "Agreement")).toEqual([["0", "—"]]);
    expect(rowsAfter(s, "Annotators")).toEqual([["ana", "2", "50.0%", "0.0%", "50.0%", "0.0%", "—"]]);
    // the rest of the report is all there
    expect(count(html, "<section id=")).toBe(REPORT_SECTIONS.length + 1);
    expect(sectionOf(html, "overview")).toContain(`${bad}:2: not a label record`);
    expect(count(sectionOf(html, "rounds"), "<tr>")).toBe(3);
    expect(sectionOf(html, "samples")).toContain("Round 2: 6 pairs");
  });

  it("ignores a torn last line, as the label files allow", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 1, roundsWritten: 1, checkpointRound: null, agentsSaved: false });
    writeLabelFile(dir, 1, JSON.stringify(labelRecord(1, 0, "ana", "target", 0)) + "\n" + JSON.stringify(labelRecord(1, 1, "ana", "tie", 1)).slice(0, 40));
    const run = await readRun(dir);
    expect(run.humanLabels?.files.map((f) => [f.records.length, f.error])).toEqual([[1, null]]);
    expect(rowsAfter(sectionOf(renderReport(run), "human-labels"), "Picks per round")[0]!.slice(0, 3)).toEqual(["1", "1", "1"]);
  });

  it("shows the rounds of label files that are still empty, and says when nobody gave a reason", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 1, roundsWritten: 1, checkpointRound: null, agentsSaved: false });
    writeLabelFile(dir, 1, "");
    const s = sectionOf(renderReport(await readRun(dir)), "human-labels");
    expect(rowsAfter(s, "Picks per round")).toEqual([["1", "0", "0", "0", "0", "0", "0", "5"]]);
    expect(s).toContain("No labels yet.");
    expect(s).toContain("No label has a rationale.");
    expect(rowsAfter(s, "Agreement")).toEqual([["0", "—"]]);
  });

  it("leaves the section out without label files, and reads only the names readLabels writes", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 1, roundsWritten: 1, checkpointRound: 1, agentsSaved: true });
    const none = await readRun(dir);
    expect(none.humanLabels).toBeNull();
    expect(none.files.map((f) => f.name)).not.toContain("human_labels");
    mkdirSync(path.join(dir, "human_labels"));
    writeFileSync(path.join(dir, "human_labels", "round_00001.jsonl"), JSON.stringify(labelRecord(1, 0, "ana", "target", 0)) + "\n");
    writeFileSync(path.join(dir, "human_labels", "notes.txt"), "labelling went fine\n");
    const run = await readRun(dir);
    expect(run.humanLabels).toBeNull();
    const html = renderReport(run);
    expect(html).not.toContain('id="human-labels"');
    expect(html).not.toContain('href="#human-labels"');
    expect(count(html, "<section id=")).toBe(REPORT_SECTIONS.length);
  });
});
