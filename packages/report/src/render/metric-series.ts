/**
 * From metrics records to chart series: which round each record belongs to, points of one key
 * against another, and how the numeric keys of a kind group into charts (per-agent keys share a
 * chart, one series per agent).
 */
import type { Point } from "../charts/line-chart.js";
import { num } from "../read/metrics-file.js";
import type { MetricsRecord } from "../run-data.js";

/**
 * The round of every record: a "round" record starts its round (it is written after the
 * round's collection, before its training); train and reward records carry `round`; eval
 * records belong to the round in progress.
 */
export function recordRounds(records: readonly MetricsRecord[]): (number | null)[] {
  let current: number | null = null;
  return records.map((r) => {
    const marker = r.kind === "round" ? num(r, "iter/current_iteration") : num(r, "round");
    if (Number.isFinite(marker)) current = marker;
    return current;
  });
}

/** Points of `key` against `xKey` (against `step` where a record has no `xKey`). */
export function points(records: readonly MetricsRecord[], key: string, xKey: string): Point[] {
  return records.filter((r) => key in r).map((r) => [Number.isFinite(num(r, xKey)) ? num(r, xKey) : r.step, num(r, key)] as const);
}

export interface ChartGroup {
  /** The chart's title: the key, or for per-agent keys the shared suffix. */
  title: string;
  series: { name: string; key: string }[];
}

const PER_AGENT = /^(joint|agent_(\d+))\/(.+)$/;

/**
 * Keys grouped into charts: `joint/margin`, `agent_0/margin`, `agent_1/margin` → one "margin"
 * chart with series joint, agent_0, agent_1; any other key alone. Groups keep first-seen order,
 * except that the `first` titles lead in the order given.
 */
export function groupKeys(keys: readonly string[], first: readonly string[] = []): ChartGroup[] {
  const groups = new Map<string, ChartGroup>();
  for (const key of keys) {
    const m = PER_AGENT.exec(key);
    const title = m === null ? key : m[3]!;
    const name = m === null ? key : m[1]!;
    const g = groups.get(title) ?? { title, series: [] };
    g.series.push({ name, key });
    groups.set(title, g);
  }
  const rank = (s: { name: string }) => (s.name === "joint" ? -1 : s.name.startsWith("agent_") ? Number(s.name.slice(6)) : -2);
  for (const g of groups.values()) g.series.sort((a, b) => rank(a) - rank(b));
  const all = [...groups.values()];
  const lead = first.flatMap((t) => all.filter((g) => g.title === t));
  return [...lead, ...all.filter((g) => !first.includes(g.title))];
}

/** Shares and accuracies are drawn on [0, 1], so curves of different runs look alike. */
export function unitRange(key: string): [number, number] | undefined {
  return /accuracy|win_rate|clip_fraction/.test(key) ? [0, 1] : undefined;
}

/**
 * Where each round's updates start, for iterative runs: the first `update` logged in round r
 * (train records carry `round`), as chart markers "r2", "r3", … The first round is left out: it
 * starts where the axis does.
 */
export function roundMarkers(train: readonly MetricsRecord[]): { x: number; label: string }[] {
  const first = new Map<number, number>();
  for (const r of train) {
    const round = num(r, "round");
    const update = num(r, "update");
    if (Number.isFinite(round) && Number.isFinite(update) && !first.has(round)) first.set(round, update);
  }
  return (
    [...first.entries()]
      .sort((a, b) => a[0] - b[0])
      .slice(1)
      // the update counter is bumped before the line is written, so round r starts just before its first logged update
      .map(([round, update]) => ({ x: update - 0.5, label: `r${round}` }))
  );
}
