/**
 * Per round (iterative trainers): new, buffered and trained pairs, comparator win rate, invalid
 * candidates, mean rewards and time, from the round records (iter/*) — and every other numeric
 * iter/* series a run logs — with round-file counts where a round has no record.
 */
import { barChart } from "../charts/bar-chart.js";
import { COMPARATOR_COLOR, TARGET_COLOR } from "../charts/frame.js";
import { lineChart } from "../charts/line-chart.js";
import { formatDuration, formatNumber, formatPercent } from "../format-number.js";
import { num, numericKeys } from "../read/metrics-file.js";
import type { MetricsRecord, RunData } from "../run-data.js";
import { chartGrid, note, section, table, type Html } from "./html.js";
import { unitRange } from "./metric-series.js";
import { timings } from "./timings.js";

const ROUND_KEY = "iter/current_iteration";
const PAIR_KEYS = /pairs/;
const INVALID_KEYS = /invalid/;
const REWARD_KEYS = /reward_mean$/;

/** Names for the keys the trainers log; any other iter/* key is named after itself. */
const LABELS: Record<string, string> = {
  "iter/current_preference_pairs": "new pairs",
  "iter/total_preference_pairs": "in buffer",
  "iter/train_preference_pairs": "trained on",
  "iter/replayed_train_pairs": "replayed",
  "iter/invalid_target_candidates": "target",
  "iter/invalid_comparator_candidates": "comparator",
  "iter/target_reward_mean": "target",
  "iter/comparator_reward_mean": "comparator",
};

function label(key: string): string {
  return LABELS[key] ?? key.replace(/^iter\//, "").replace(/_/g, " ");
}

/** Target orange and comparator grey as everywhere; the pair counts get colours of their own. */
function colorOf(key: string): string | undefined {
  if (key.includes("target")) return TARGET_COLOR;
  if (key.includes("comparator")) return COMPARATOR_COLOR;
  return {
    "iter/current_preference_pairs": "#1f77b4",
    "iter/total_preference_pairs": "#9ecae1",
    "iter/train_preference_pairs": "#2ca02c",
    "iter/replayed_train_pairs": "#98df8a",
  }[key];
}

export function roundsSection(run: RunData): Html {
  const title = "Rounds";
  if (run.trainer === "madpo" || run.trainer === "marlhf")
    return section("rounds", title, note("Base trainers collect their pairs once: there are no rounds (see Preference data)."));
  // The last record of a round wins (a round is logged once; a resumed run cuts the file back).
  const byRound = new Map<number, MetricsRecord>();
  for (const r of run.metrics.byKind.round) if (Number.isInteger(num(r, ROUND_KEY))) byRound.set(num(r, ROUND_KEY), r);
  const files = new Map(run.rounds.map((f) => [f.iteration!, f]));
  const rounds = [...new Set([...byRound.keys(), ...files.keys()])].sort((a, b) => a - b);
  if (rounds.length === 0) return section("rounds", title, note("No round has been logged or written yet."));
  const perRound = timings(run.metrics.records).perRound;
  const value = (round: number, key: string) => {
    const r = byRound.get(round);
    return r === undefined ? Number.NaN : num(r, key);
  };
  const newPairs = (round: number) => (byRound.has(round) ? value(round, "iter/current_preference_pairs") : (files.get(round)?.numPairs ?? Number.NaN));
  const rows = rounds.map((round) => [
    String(round),
    formatNumber(newPairs(round)),
    formatNumber(value(round, "iter/total_preference_pairs")),
    formatNumber(value(round, "iter/train_preference_pairs")),
    formatNumber(value(round, "iter/replayed_train_pairs")),
    formatPercent(value(round, "iter/comparator_win_rate")),
    `${formatNumber(value(round, "iter/invalid_target_candidates"))} / ${formatNumber(value(round, "iter/invalid_comparator_candidates"))}`,
    formatNumber(value(round, "iter/target_reward_mean")),
    formatNumber(value(round, "iter/comparator_reward_mean")),
    files.get(round)?.scorer ?? "—",
    formatDuration(perRound.get(round)),
  ]);
  const categories = rounds.map(String);
  const keys = numericKeys([...byRound.values()]).filter((k) => k !== ROUND_KEY);
  const bars = (chartTitle: string, yLabel: string, ks: string[]) =>
    barChart({
      title: chartTitle,
      xLabel: "round",
      yLabel,
      categories,
      series: ks.map((k) => ({ name: label(k), values: rounds.map((r) => value(r, k)), color: colorOf(k) })),
    });
  const charts: string[] = [];
  const pairKeys = keys.filter((k) => PAIR_KEYS.test(k));
  if (pairKeys.length > 0) charts.push(bars("Preference pairs per round", "pairs", pairKeys));
  else
    charts.push(
      barChart({
        title: "New pairs per round (round files)",
        xLabel: "round",
        yLabel: "pairs",
        categories,
        series: [{ name: "new pairs", values: rounds.map(newPairs) }],
      }),
    );
  const line = (key: string) =>
    lineChart({
      title: label(key),
      xLabel: "round",
      yLabel: label(key),
      series: [{ name: label(key), points: rounds.map((r) => [r, value(r, key)] as const), color: colorOf(key) }],
      yRange: unitRange(key),
      integerX: true,
    });
  if (keys.includes("iter/comparator_win_rate")) charts.push(line("iter/comparator_win_rate"));
  const invalidKeys = keys.filter((k) => INVALID_KEYS.test(k));
  if (invalidKeys.length > 0) charts.push(bars("Invalid candidates per round", "candidates", invalidKeys));
  const rewardKeys = keys.filter((k) => REWARD_KEYS.test(k));
  if (rewardKeys.length > 0) {
    charts.push(
      lineChart({
        title: "Mean candidate reward per round",
        xLabel: "round",
        yLabel: "reward",
        series: rewardKeys.map((k) => ({ name: label(k), points: rounds.map((r) => [r, value(r, k)] as const), color: colorOf(k) })),
        integerX: true,
      }),
    );
  }
  for (const k of keys.filter((k) => !PAIR_KEYS.test(k) && !INVALID_KEYS.test(k) && !REWARD_KEYS.test(k) && k !== "iter/comparator_win_rate"))
    charts.push(line(k));
  if (perRound.size > 0)
    charts.push(
      barChart({
        title: "Time per round",
        xLabel: "round",
        yLabel: "seconds",
        categories,
        series: [{ name: "seconds", values: rounds.map((r) => perRound.get(r) ?? null) }],
      }),
    );
  return section(
    "rounds",
    title,
    note(
      "New pairs: this round's comparisons with a clear winner. In buffer: all pairs the replay index holds. Trained on: the replay's selection this round; of which replayed: the pairs it drew from earlier rounds. Comparator win rate: the share of comparisons the comparator won. Time: from the previous round's last record to this round's last one (the first round includes loading; the last, the final evaluation).",
    ),
    table(
      [
        "round",
        "new pairs",
        "in buffer",
        "trained on",
        "of which replayed",
        "comparator win rate",
        "invalid (target / comparator)",
        "target reward mean",
        "comparator reward mean",
        "labelled by",
        "time",
      ],
      rows,
      "numbers",
    ),
    chartGrid(charts),
  );
}
