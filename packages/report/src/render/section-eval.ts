/** Evaluation reward over updates, the value before training included (the eval at update 0). */
import { lineChart } from "../charts/line-chart.js";
import { formatNumber } from "../format-number.js";
import { num, numericKeys } from "../read/metrics-file.js";
import type { RunData } from "../run-data.js";
import { chartGrid, note, p, section, type Html } from "./html.js";
import { points, roundMarkers, unitRange } from "./metric-series.js";

const MAIN = "eval/turn_1/reward_mean";
const RETURN = "eval/turn_1/expected_return";

export function evalSection(run: RunData): Html {
  const records = run.metrics.byKind.eval;
  if (records.length === 0) {
    return section(
      "eval",
      "Evaluation reward",
      note("No evaluation in metrics.jsonl yet: the run has no eval_dataset, eval_interval is 0, or it has not evaluated so far."),
    );
  }
  const keys = numericKeys(records);
  const series = [{ name: "reward mean", points: points(records, MAIN, "update") }];
  // Single-turn runs log the same number twice; draw the expected return only when it differs.
  const differs = records.some((r) => RETURN in r && num(r, RETURN) !== num(r, MAIN));
  if (differs) series.push({ name: "expected return", points: points(records, RETURN, "update") });
  const markers = roundMarkers(run.metrics.byKind.train);
  const charts = [lineChart({ title: "Evaluation reward (task reward)", xLabel: "update", yLabel: "reward", series, integerX: true, markers })];
  for (const key of keys.filter((k) => k !== MAIN && k !== RETURN)) {
    charts.push(
      lineChart({
        title: key,
        xLabel: "update",
        yLabel: key,
        series: [{ name: key, points: points(records, key, "update") }],
        yRange: unitRange(key),
        integerX: true,
      }),
    );
  }
  const withMain = records.filter((r) => Number.isFinite(num(r, MAIN)));
  const first = withMain[0];
  const last = withMain[withMain.length - 1];
  const summary =
    first === undefined || last === undefined
      ? []
      : [
          p(
            `${num(first, "update") === 0 ? "Before training" : `First evaluation (after ${formatNumber(num(first, "update"))} updates)`}: ${formatNumber(num(first, MAIN))}. ` +
              `Latest (after ${formatNumber(num(last, "update"))} updates): ${formatNumber(num(last, MAIN))}` +
              (first !== last ? ` (${num(last, MAIN) >= num(first, MAIN) ? "+" : ""}${formatNumber(num(last, MAIN) - num(first, MAIN))}).` : "."),
          ),
        ];
  return section(
    "eval",
    "Evaluation reward",
    ...summary,
    note(`${records.length} evaluations with the task reward, on the eval dataset. The x-axis counts optimizer updates over the whole run.`),
    chartGrid(charts),
  );
}
