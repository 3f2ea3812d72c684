/**
 * One round's reward-distribution plot, as CoMLRL logs per round: target (orange) against
 * comparator (grey) over all scored candidates, and the same for the pairs selected for training,
 * side by side in one standalone SVG. The trainer writes it next to the round's JSON file.
 */
import { histogramChart } from "./charts/histogram-chart.js";
import { COMPARATOR_COLOR, TARGET_COLOR } from "./charts/frame.js";
import { px } from "./charts/scale.js";
import { escapeHtml } from "./escape.js";
import { parseRewardDistribution } from "./read/distribution-file.js";
import { roundHistograms, type RoundHistograms } from "./shared-bins.js";

export interface RewardDistributionSvgOptions {
  /** Size of each of the two panels (default 420 × 240). */
  panelWidth?: number;
  panelHeight?: number;
  /** The SVG namespace, for a standalone .svg file (default true). */
  xmlns?: boolean;
  /** Bins to draw on instead of the file's own (the report's bins shared by all rounds). */
  edges?: readonly number[];
}

/** The histogram chart of one group ("candidates" or "selected pairs") of a round. */
export function roundHistogramSvg(
  h: RoundHistograms,
  group: "candidate" | "selected",
  options: { width?: number; height?: number; xmlns?: boolean } = {},
): string {
  const counts = group === "candidate" ? h.candidate : h.selected;
  const title = group === "candidate" ? `Round ${h.iteration}: all candidates` : `Round ${h.iteration}: selected pairs`;
  return histogramChart({
    title,
    xLabel: "reward",
    yLabel: "count",
    width: options.width ?? 420,
    height: options.height ?? 240,
    xmlns: options.xmlns,
    bins: {
      edges: h.edges,
      series: [
        { name: "target", counts: counts?.target ?? h.edges.slice(1).map(() => 0), color: TARGET_COLOR },
        { name: "comparator", counts: counts?.comparator ?? h.edges.slice(1).map(() => 0), color: COMPARATOR_COLOR },
      ],
    },
  });
}

/**
 * The SVG of one distribution file: its parsed JSON (a RewardDistributionFile from the trainer,
 * or JSON.parse of the file). Throws RewardDistributionFormatError when it is not one.
 */
export function rewardDistributionSvg(file: unknown, options: RewardDistributionSvgOptions = {}): string {
  const dist = parseRewardDistribution(file);
  const w = options.panelWidth ?? 420;
  const hgt = options.panelHeight ?? 240;
  const h = roundHistograms(dist, options.edges ?? dist.bin_edges);
  const title = `Reward distribution, round ${dist.iteration}`;
  const ns = options.xmlns === false ? "" : ` xmlns="http://www.w3.org/2000/svg"`;
  return (
    `<svg${ns} class="reward-distribution" width="${2 * w}" height="${hgt}" viewBox="0 0 ${2 * w} ${hgt}" role="img" aria-label="${escapeHtml(title)}">` +
    `<title>${escapeHtml(title)}</title>` +
    roundHistogramSvg(h, "candidate", { width: w, height: hgt }) +
    `<g transform="translate(${px(w)} 0)">${roundHistogramSvg(h, "selected", { width: w, height: hgt })}</g>` +
    `</svg>`
  );
}
