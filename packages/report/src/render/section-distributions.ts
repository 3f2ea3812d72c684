/**
 * Target-vs-comparator reward histograms per round, for all scored candidates and for the pairs
 * selected for training, every round on the same bins (shared-bins.ts) so they compare bar for bar.
 */
import { formatNumber } from "../format-number.js";
import type { RewardSeries } from "../read/distribution-file.js";
import { roundHistogramSvg } from "../reward-distribution-svg.js";
import type { RunData } from "../run-data.js";
import { roundHistograms, sharedBins } from "../shared-bins.js";
import { chartGrid, el, note, section, table, type Html } from "./html.js";

const SOURCE_TEXT = {
  common:
    "Every round's file has this range (the reward function's declared reward_range, or rounds that saw the same range); values outside it are counted in the end bins.",
  raw: "Rounds recorded different ranges (no declared reward_range), so every round is re-binned from its raw rewards on the range of all rounds' raw rewards.",
  recorded:
    "Rounds recorded different ranges and some files hold no raw rewards: the range is the union of the recorded ranges, and counts of those files are moved by bin centre (approximate).",
} as const;

function stat(s: RewardSeries | undefined): string {
  return s === undefined ? "—" : `${s.sample_count} (mean ${formatNumber(s.mean)})`;
}

export function distributionsSection(run: RunData): Html {
  const title = "Reward distributions";
  const files = run.distributions;
  if (files.length === 0) {
    const why =
      run.trainer === "madpo" || run.trainer === "marlhf"
        ? "Base trainers write no per-round distributions (see Preference data for the pairs' rewards)."
        : "No reward_distributions/iteration_NNNN.json files yet (written after each round's collection).";
    return section("distributions", title, note(why));
  }
  const bins = sharedBins(files)!;
  const lo = bins.edges[0]!;
  const hi = bins.edges[bins.edges.length - 1]!;
  const rows = files.map((f) => [
    String(f.iteration),
    stat(f.candidate.target),
    stat(f.candidate.comparator),
    stat(f.selected?.target),
    stat(f.selected?.comparator),
  ]);
  const perRound = files.map((f) => {
    const h = roundHistograms(f, bins.edges);
    return el(
      "div",
      { class: "round-distribution", "data-round": String(f.iteration) },
      el("h3", {}, `Round ${f.iteration}`),
      h.approximate ? note("Approximate: this file has no raw rewards, so its counts were moved to the shared bins by bin centre.") : [],
      chartGrid([roundHistogramSvg(h, "candidate"), ...(h.selected === null ? [] : [roundHistogramSvg(h, "selected")])]),
    );
  });
  return section(
    "distributions",
    title,
    note(
      `Raw task rewards of the current agents (target, orange) and the comparator (grey): all scored candidates of the round, and the pairs the replay selected for training. ${bins.edges.length - 1} bins on [${formatNumber(lo)}, ${formatNumber(hi)}]. ${SOURCE_TEXT[bins.source]}`,
    ),
    table(
      ["round", "candidates: target n (mean)", "candidates: comparator n (mean)", "selected: target n (mean)", "selected: comparator n (mean)"],
      rows,
      "numbers",
    ),
    ...perRound,
  );
}
