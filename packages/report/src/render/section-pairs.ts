/** The base trainers' preference data: the collect record and the pairs' rewards. */
import { histogramChart } from "../charts/histogram-chart.js";
import { formatNumber } from "../format-number.js";
import { binEdges, histogram } from "../shared-bins.js";
import { num, numericKeys } from "../read/metrics-file.js";
import type { RunData } from "../run-data.js";
import { extent } from "../charts/scale.js";
import { chartGrid, note, section, table, type Html } from "./html.js";

export function pairsSection(run: RunData): Html {
  const title = "Preference data";
  if (run.trainer === "madpo_iter" || run.trainer === "marlhf_iter") {
    return section("pairs", title, note("Iterative trainers collect pairs every round: see Rounds, Reward distributions and Sample pairs."));
  }
  const collect = run.metrics.byKind.collect;
  const body = [];
  if (collect.length > 0)
    body.push(
      table(
        ["metric", "value"],
        numericKeys(collect).map((k) => [k, formatNumber(num(collect[collect.length - 1]!, k))]),
      ),
    );
  else body.push(note("No collect record in metrics.jsonl (the run has not finished collecting, or the file is missing)."));
  const pairs = run.pairs;
  if (pairs === null) body.push(note("preference_pairs.json is missing: the run has not finished collecting."));
  else if (pairs.numPairs === 0) body.push(note("preference_pairs.json holds no pairs."));
  else {
    const [lo, hi] = extent([...pairs.winnerRewards, ...pairs.loserRewards]);
    const edges = binEdges(lo, hi, 16);
    body.push(
      note(`${pairs.numPairs} pairs. Rewards are the processed rewards that ranked each pair.`),
      chartGrid([
        histogramChart({
          title: "Rewards of the pairs",
          bins: {
            edges,
            series: [
              { name: "winner", counts: histogram(pairs.winnerRewards, edges) },
              { name: "loser", counts: histogram(pairs.loserRewards, edges) },
            ],
          },
        }),
      ]),
    );
  }
  return section("pairs", title, ...body);
}
