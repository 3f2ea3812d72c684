// Charts: pure functions from a spec to an SVG string.
export { lineChart } from "./charts/line-chart.js";
export type { LineChartSpec, LineSeries, Point } from "./charts/line-chart.js";
export { histogramChart } from "./charts/histogram-chart.js";
export type { HistogramChartSpec, HistogramSeries } from "./charts/histogram-chart.js";
export { barChart } from "./charts/bar-chart.js";
export type { BarChartSpec, BarSeries } from "./charts/bar-chart.js";
export { PALETTE, TARGET_COLOR, COMPARATOR_COLOR } from "./charts/frame.js";
export type { SvgOptions } from "./charts/frame.js";
export { escapeHtml } from "./escape.js";
export { formatNumber, formatPercent, formatDuration } from "./format-number.js";

// Per-round reward distributions (the trainer's per-round plot, and the report's shared bins).
export { rewardDistributionSvg, roundHistogramSvg } from "./reward-distribution-svg.js";
export type { RewardDistributionSvgOptions } from "./reward-distribution-svg.js";
export { RewardDistributionSchema, parseRewardDistribution, RewardDistributionFormatError } from "./read/distribution-file.js";
export type { RewardDistribution, RewardSeries } from "./read/distribution-file.js";
export { sharedBins, roundHistograms, binEdges, histogram } from "./shared-bins.js";
export type { SharedBins, RoundHistograms } from "./shared-bins.js";

// Reading a run folder.
export { readRun } from "./read/read-run.js";
export type { ReadRunOptions } from "./read/read-run.js";
export { parseMetrics } from "./read/metrics-file.js";
export { runStatus } from "./read/run-status.js";
export { readHumanLabels } from "./read/label-files.js";
export type { StatusFacts } from "./read/run-status.js";
export { TRAINERS, METRIC_KINDS } from "./run-data.js";
export type {
  RunData,
  RunStatus,
  RunState,
  MetricsData,
  MetricsRecord,
  MetricValue,
  MetricKind,
  PairSet,
  PairSample,
  HumanLabelsData,
  HumanLabelFile,
  LockInfo,
  TrainerName,
} from "./run-data.js";

// The report.
export { renderReport, reportSections, REPORT_SECTIONS, HUMAN_LABELS_SECTION } from "./render/render-report.js";
export type { RenderOptions } from "./render/render-report.js";
export { writeReport, REPORT_FILE } from "./write-report.js";
export type { WriteReportOptions } from "./write-report.js";
export { GENERATOR_META } from "./render/page.js";
export { ReportError } from "./errors.js";
