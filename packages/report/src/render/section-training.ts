/**
 * Training curves: every numeric series of the train records against updates. MADPO logs loss,
 * joint/accuracy and margins (joint and per agent); MARLHF's RL stage logs per-agent losses,
 * advantages, log-probs, values and KL terms, critic metrics and returns — whatever a run logged
 * is drawn, per-agent keys sharing a chart.
 */
import { lineChart } from "../charts/line-chart.js";
import { numericKeys } from "../read/metrics-file.js";
import type { RunData } from "../run-data.js";
import { chartGrid, note, section, type Html } from "./html.js";
import { groupKeys, points, roundMarkers, unitRange } from "./metric-series.js";

const MADPO_FIRST = ["loss", "accuracy", "margin"];
const RL_FIRST = ["turn_1/reward_mean", "loss", "advantage_mean", "reference_kl_mean", "value_loss"];

export function trainingSection(run: RunData): Html {
  const marlhf = run.trainer === "marlhf" || run.trainer === "marlhf_iter";
  const title = marlhf ? "Policy learning (RL against the reward model)" : "Training (MADPO)";
  const records = run.metrics.byKind.train;
  if (records.length === 0) return section("training", title, note("No training records in metrics.jsonl yet."));
  const groups = groupKeys(numericKeys(records), marlhf ? RL_FIRST : MADPO_FIRST);
  const markers = roundMarkers(records);
  const charts = groups.map((g) =>
    lineChart({
      title: g.title,
      xLabel: "update",
      yLabel: g.title,
      series: g.series.map((s) => ({ name: s.name, points: points(records, s.key, "update") })),
      yRange: unitRange(g.title),
      integerX: true,
      markers,
    }),
  );
  const rounds = markers.length > 0 ? " Dashed lines mark where each round's training starts." : "";
  const what = marlhf
    ? "Rewards here are the frozen reward model's (evaluation uses the task reward). Per-agent series share a chart."
    : "Margins are log-probability differences (winner − loser), joint = sum over agents; accuracy is the share of pairs with a positive joint margin.";
  return section("training", title, note(`${records.length} logged updates (logging_steps applies). ${what}${rounds}`), chartGrid(charts));
}
