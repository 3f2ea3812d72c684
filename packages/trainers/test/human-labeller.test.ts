import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readLabels } from "@pbrl/human-labels";
import { readRoundFile } from "@pbrl/preference-data";
import { MADPOIterConfig, MADPOIterTrainer, MARLHFIterConfig, MARLHFIterTrainer } from "../src/index.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";
import { labelUrl, moreEs, Person, type Pick, type ShownComparison } from "./human-people.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-human-"));

const HUMAN = {
  ...ITERATIVE_RUN.args,
  preference_labeler: "human" as const,
  num_iterations: 2,
  comparator_policy: "current" as const,
  comparator_history_k: null,
  preference_replay_mode: "current" as const,
  preference_replay_lambda: null,
  preference_replay_sample_size: null,
  log_reward_distribution: false,
  eval_interval: 0,
  verbose: false,
};

/** The side a recorded pick names, through the order the page showed. */
function sideOf(shown: ShownComparison, pick: Pick, texts: { target: string[]; comparator: string[] }): "target" | "comparator" | null {
  if (pick === "tie" || pick === "both_bad") return null;
  const leftIsTarget = JSON.stringify(shown.left) === JSON.stringify(texts.target);
  return (pick === "left") === leftIsTarget ? "target" : "comparator";
}

describe("preference_labeler=human", () => {
  it("two people label a madpo_iter run over HTTP: the round files hold exactly their picks, and the agents train on them", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      rewardFunc: undefined,
      log: (l) => lines.push(l),
      args: MADPOIterConfig({ ...HUMAN, output_dir: out }),
    });
    let finished = false;
    const run = t.train().finally(() => (finished = true));
    while (labelUrl(lines.join("\n")) === undefined && !finished) await new Promise((r) => setTimeout(r, 20));
    const url = labelUrl(lines.join("\n"))!;
    expect(url.hostname).toBe("127.0.0.1");
    const ana = new Person("ana", url);
    const bo = new Person("bo", url);
    // ana always picks by the letter e's; bo calls everything he sees "both bad" in round 2
    await Promise.all([
      ana.labelUntil(moreEs, () => finished),
      bo.labelUntil(
        (s) => (s.round === 2 ? "both_bad" : moreEs(s)),
        () => finished,
      ),
    ]);
    const result = await run;
    t.dispose();

    expect(ana.picks.length + bo.picks.length).toBe(12); // 6 items × 1 comparison × 2 rounds, each shown to one person
    expect(new Set([...ana.picks, ...bo.picks].map((p) => p.comparisonId)).size).toBe(12);
    expect(ana.picks.length).toBeGreaterThan(0);
    expect(bo.picks.length).toBeGreaterThan(0);
    for (const round of [1, 2]) {
      const labels = await readLabels(path.join(out, "human_labels"), round);
      const file = await readRoundFile(path.join(out, "preference_replay", `iteration_000${round}.json`));
      expect(file.scorer).toBe("human");
      const picks = [...ana.picks, ...bo.picks].filter((p) => p.shown.round === round);
      expect(labels.map((l) => l.comparison_id).sort()).toEqual(picks.map((p) => p.comparisonId).sort());
      // each pick with a winner is one pair, winner and loser as the shown order says; ties and both bad none
      const expected = picks.flatMap((p) => {
        const label = labels.find((l) => l.comparison_id === p.comparisonId)!;
        const texts = {
          target: label.shown_left === "target" ? p.shown.left : p.shown.right,
          comparator: label.shown_left === "target" ? p.shown.right : p.shown.left,
        };
        const side = sideOf(p.shown, p.pick, texts);
        expect(label.winner).toBe(side);
        expect(label.annotator).toBe(ana.picks.includes(p) ? "ana" : "bo");
        if (side === null) return [];
        const other = side === "target" ? "comparator" : "target";
        return [JSON.stringify([texts[side], texts[other], p.comparisonId])];
      });
      const pairs = file.pairs.map((r) => JSON.stringify([r.winner_completions, r.loser_completions, r["comparison_id"]]));
      expect(pairs.sort()).toEqual(expected.sort());
      for (const r of file.pairs) {
        expect(r["scorer"]).toBe("human");
        expect(r.winner_reward).toBe(1);
        expect(r.loser_reward).toBe(0);
        expect((r["annotators"] as string[]).length).toBe(1);
      }
    }
    // round 1 had pairs (with e's to prefer), and the agents trained on them
    const metrics = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const round1 = metrics.find((m) => m["kind"] === "round" && m["iter/current_iteration"] === 1)!;
    expect(round1["human/labels"]).toBe(6);
    expect(round1["iter/current_preference_pairs"]).toBeGreaterThan(0);
    expect(result.updates).toBeGreaterThan(0);
    expect(metrics.some((m) => m["kind"] === "train" && m["round"] === 1)).toBe(true);
    // no reward_func: no evaluation, said once
    expect(lines.filter((l) => l.includes("no reward_func: evaluation is skipped")).length).toBeLessThanOrEqual(1);
    expect(result.evalAfter).toBeUndefined();
  }, 240_000);

  it("waits for human_min_labels, then the reward labels what is left (human_fallback=reward); MARLHF's reward model learns from the pairs", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      log: (l) => lines.push(l),
      args: MARLHFIterConfig({
        ...HUMAN,
        ...MARLHF_ITER_ARGS,
        preference_scoring_reward: "task",
        num_iterations: 1,
        human_min_labels: 2,
        human_fallback: "reward",
        output_dir: out,
      }),
    });
    let finished = false;
    const run = t.train().finally(() => (finished = true));
    while (labelUrl(lines.join("\n")) === undefined && !finished) await new Promise((r) => setTimeout(r, 20));
    const ana = new Person("ana", labelUrl(lines.join("\n"))!);
    // two "left" picks only: the round then stops waiting
    await ana.labelUntil(
      () => "left",
      () => finished,
      2,
    );
    await run;
    t.dispose();
    const file = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    const byScorer = (s: string) => file.pairs.filter((p) => p["scorer"] === s);
    expect(byScorer("human")).toHaveLength(2);
    expect(file.pairs.length).toBe(byScorer("human").length + byScorer("task").length);
    for (const p of byScorer("task")) expect(p.winner_reward).toBeGreaterThan(p.loser_reward);
    expect(lines.filter((l) => l.includes("people decided"))).toEqual([expect.stringMatching(/people decided 2 of 6 comparisons .*labelled by the reward/)]);
    expect(lines.some((l) => /reward model fitted on \d+ pairs/.test(l))).toBe(true);
  }, 240_000);

  it("refuses what cannot work, before output_dir is touched", () => {
    expect(() => MADPOIterConfig({ human_pairs_per_item: 2 })).toThrow(/human_pairs_per_item: is only valid with preference_labeler="human"/);
    expect(() => MARLHFIterConfig({ preference_labeler: "human", preference_scoring_reward: "reward_model" })).toThrow(/choose one/);
    expect(() => MADPOIterConfig({ preference_labeler: "human", human_fallback: "reward" })).toThrow(/set human_min_labels or human_label_timeout_s/);
    const out = path.join(tmp(), "run");
    expect(
      () =>
        new MADPOIterTrainer({
          ...ITERATIVE_RUN,
          rewardFunc: undefined,
          args: MADPOIterConfig({ ...HUMAN, human_fallback: "reward", human_label_timeout_s: 5, output_dir: out }),
        }),
    ).toThrow(/human_fallback: "reward" labels undecided comparisons with reward_func, and none was given/);
    expect(() => new MADPOIterTrainer({ ...ITERATIVE_RUN, rewardFunc: undefined, args: MADPOIterConfig({ output_dir: out }) })).toThrow(
      /may be left out only with preference_labeler="human"/,
    );
    expect(existsSync(out)).toBe(false);
  });
});
