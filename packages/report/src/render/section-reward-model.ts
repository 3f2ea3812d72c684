/**
 * MARLHF's reward model: the Bradley–Terry fit's loss, accuracy and margin per epoch (all fits in
 * order), each round's final training accuracy next to its held-out accuracy (the model scored on
 * the next round's new pairs, which it never saw), and any other reward/* series.
 */
import { lineChart } from "../charts/line-chart.js";
import { formatNumber, formatPercent } from "../format-number.js";
import { num, numericKeys } from "../read/metrics-file.js";
import type { MetricsRecord, RunData } from "../run-data.js";
import { chartGrid, note, section, table, type Html } from "./html.js";
import { unitRange } from "./metric-series.js";

const EPOCH = "reward/epoch";
const HELDOUT = "reward/heldout_accuracy";

export function rewardModelSection(run: RunData): Html {
  const title = "Reward model";
  if (run.trainer === "madpo" || run.trainer === "madpo_iter")
    return section("reward-model", title, note("MADPO learns from the pairs directly: there is no reward model."));
  const records = run.metrics.byKind.reward;
  if (records.length === 0)
    return section("reward-model", title, note("No reward-model records in metrics.jsonl yet (the first fit logs one line per epoch)."));
  const fits = records.filter((r) => Number.isFinite(num(r, EPOCH)));
  const heldout = records.filter((r) => HELDOUT in r);
  const charts: string[] = [];
  // Fit epochs in order over the whole run: x = 1, 2, … across rounds.
  for (const key of numericKeys(fits).filter((k) => k !== EPOCH)) {
    charts.push(
      lineChart({
        title: key,
        xLabel: "reward-model epoch (all fits in order)",
        yLabel: key,
        series: [{ name: key, points: fits.map((r, i) => [i + 1, num(r, key)] as const) }],
        yRange: unitRange(key),
        integerX: true,
      }),
    );
  }
  const iterative = run.trainer === "marlhf_iter" || fits.some((r) => "round" in r);
  const body: (Html | Html[])[] = [];
  if (iterative) {
    // A held-out line is logged in round r for the model fitted in round r − 1: drawn at r − 1, beside that fit's own accuracy.
    const lastFit = new Map<number, MetricsRecord>();
    for (const r of fits) if (Number.isFinite(num(r, "round"))) lastFit.set(num(r, "round"), r);
    const held = new Map<number, MetricsRecord>();
    for (const r of heldout) if (Number.isFinite(num(r, "round"))) held.set(num(r, "round") - 1, r);
    const rounds = [...new Set([...lastFit.keys(), ...held.keys()])].sort((a, b) => a - b);
    if (rounds.length > 0) {
      charts.unshift(
        lineChart({
          title: "Reward-model accuracy per round",
          xLabel: "round the model was fitted in",
          yLabel: "accuracy",
          yRange: [0, 1],
          integerX: true,
          series: [
            {
              name: "training pairs (last epoch)",
              points: rounds.map((r) => [r, lastFit.has(r) ? num(lastFit.get(r)!, "reward/accuracy") : Number.NaN] as const),
            },
            { name: "held out: next round's new pairs", points: rounds.map((r) => [r, held.has(r) ? num(held.get(r)!, HELDOUT) : Number.NaN] as const) },
          ],
        }),
      );
      for (const key of numericKeys(heldout).filter((k) => k !== HELDOUT)) {
        charts.push(
          lineChart({
            title: key,
            xLabel: "round the model was fitted in",
            yLabel: key,
            series: [{ name: key, points: rounds.map((r) => [r, held.has(r) ? num(held.get(r)!, key) : Number.NaN] as const) }],
            integerX: true,
          }),
        );
      }
      body.push(
        table(
          ["round", "pairs fitted on", "final loss", "final accuracy", "held-out accuracy", "held-out pairs"],
          rounds.map((r) => {
            const f = lastFit.get(r);
            const h = held.get(r);
            return [
              String(r),
              formatNumber(f && num(f, "reward/num_pairs")),
              formatNumber(f && num(f, "reward/loss")),
              formatPercent(f && num(f, "reward/accuracy")),
              formatPercent(h && num(h, HELDOUT)),
              formatNumber(h && num(h, "reward/heldout_pairs")),
            ];
          }),
          "numbers",
        ),
      );
    }
  }
  return section(
    "reward-model",
    title,
    note(
      `A fresh joint reward model is fitted with the Bradley–Terry loss${iterative ? " every round" : ""}; accuracy is the share of pairs it ranks correctly.${iterative ? " Held-out accuracy: the model scored on the next round's new pairs before it is replaced (absent when those pairs were labelled by the reward model itself)." : ""}`,
    ),
    ...body,
    chartGrid(charts),
  );
}
