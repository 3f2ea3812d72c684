// Small but realistic run folders, written the way the trainers write them: metrics lines with
// the trainers' keys (metrics-log.ts, madpo-epochs.ts, marlhf-learner.ts, rl-backends), round and
// pairs files through preference-data's own writers, distribution files in reward-distribution.ts's
// layout, checkpoints/latest.json, agents/, run.lock.
import { mkdirSync, readFileSync, writeFileSync, appendFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir, hostname } from "node:os";
import * as path from "node:path";
import { labelFilePath, type LabelRecord } from "@pbrl/human-labels";
import { roundFileName, writePairsFile, writeRoundFile, type PairRecord } from "@pbrl/preference-data";

const made: string[] = [];

/** A fresh temporary folder, removed by removeTempDirs (each test file's afterAll). */
export async function tempDir(prefix = "pbrl-report-"): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/** A seeded stream of numbers in [0, 1), so fixtures are the same every run. */
export function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export const EVIL = `<script>alert("pwned")</script> & 'quotes'`;

export function pair(rand: () => number, item: number, evil = false): PairRecord {
  const target = Math.round(rand() * 1000) / 1000;
  let comparator = Math.round(rand() * 1000) / 1000;
  if (comparator === target) comparator = target / 2;
  const [w, l] = target > comparator ? [target, comparator] : [comparator, target];
  const text = `The captain packed rope number ${item}.`;
  return {
    prompts: [`Text: ${text}\nSummary:`, `Text: ${text}\nExpansion:`],
    winner_completions: [evil ? EVIL : ` Captain packed rope ${item}.`, ` The captain packed the rope ${item} by the lake.`],
    loser_completions: [` Packed.`, ` Rope.`],
    winner_reward: w,
    loser_reward: l,
    candidate_reward_mean: (w + l) / 2,
    raw_rewards: [w, l],
    target_raw_reward: target,
    comparator_raw_reward: comparator,
    prompt_token_ids: [
      [1, 2, 3],
      [1, 2, 4],
    ],
    winner_token_ids: [
      [5, 6, 2],
      [7, 8, 2],
    ],
    loser_token_ids: [
      [9, 2],
      [10, 2],
    ],
  };
}

// reward-distribution.ts's format, computed the way the trainer does (16 bins, clipped, last bin closed).
function edgesOf(lo: number, hi: number): number[] {
  return Array.from({ length: 17 }, (_, i) => (i === 16 ? hi : lo + ((hi - lo) * i) / 16));
}
function seriesOf(values: number[], edges: number[]) {
  const counts = new Array<number>(16).fill(0);
  for (const v of values) {
    const x = Math.min(edges[16]!, Math.max(edges[0]!, v));
    let b = 15;
    for (let i = 0; i < 16; i++)
      if (x < edges[i + 1]!) {
        b = i;
        break;
      }
    counts[b]! += 1;
  }
  return { sample_count: values.length, mean: values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length, counts, raw_rewards: values };
}
export function distribution(
  iteration: number,
  range: [number, number] | null,
  target: number[],
  comparator: number[],
  selected: { target: number[]; comparator: number[] },
) {
  const all = [...target, ...comparator];
  const [lo, hi] = range ?? (Math.min(...all) < Math.max(...all) ? [Math.min(...all), Math.max(...all)] : [Math.min(...all) - 0.5, Math.max(...all) + 0.5]);
  const edges = edgesOf(lo, hi);
  return {
    iteration,
    reward_min: lo,
    reward_max: hi,
    num_bins: 16,
    bin_edges: edges,
    bin_centers: edges.slice(0, -1).map((e, i) => (e + edges[i + 1]!) / 2),
    candidate: { target: seriesOf(target, edges), comparator: seriesOf(comparator, edges) },
    selected: { target: seriesOf(selected.target, edges), comparator: seriesOf(selected.comparator, edges) },
  };
}

export interface IterRunSpec {
  trainer: "madpo_iter" | "marlhf_iter";
  numIterations: number;
  /** Rounds that have metrics and files (the last may be unfinished). */
  roundsWritten: number;
  /** checkpoints/latest.json's round; null: no checkpoint. */
  checkpointRound: number | null;
  agentsSaved: boolean;
  /** End metrics.jsonl in half a line, as a kill mid-write leaves it. */
  halfLine?: boolean;
  lock?: { pid: number; host: string };
  /** A declared reward_range (every distribution file has it); default: observed per round. */
  declaredRange?: [number, number];
  evil?: boolean;
  config?: Record<string, unknown>;
  /** Train lines per round. */
  updatesPerRound?: number;
  /** Leave out time/elapsed_s (runs from before they were logged). */
  noTimes?: boolean;
}

export async function writeIterRun(dir: string, spec: IterRunSpec): Promise<void> {
  const rand = lcg(7);
  const marlhf = spec.trainer === "marlhf_iter";
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, "config.json"),
    JSON.stringify(
      {
        trainer: spec.trainer,
        num_agents: 2,
        num_iterations: spec.numIterations,
        seed: 0,
        backend: "auto",
        preference_replay_mode: "lambda_decay",
        preference_replay_lambda: 0.8,
        comparator_policy: "history",
        dpo_beta: 0.1,
        ...(marlhf && { rl_algorithm: "magrpo" }),
        output_dir: dir,
        preference_replay_dir: null,
        policy_checkpoint_dir: null,
        resume_from_checkpoint: null,
        ...spec.config,
      },
      null,
      2,
    ) + "\n",
  );
  const lines: Record<string, unknown>[] = [];
  let elapsed = 0;
  const log = (r: Record<string, unknown>) => {
    elapsed += 2.5;
    lines.push(spec.noTimes === true ? r : { ...r, time: new Date(Date.UTC(2025, 0, 1) + elapsed * 1000).toISOString(), elapsed_s: elapsed });
  };
  let update = 0;
  let total = 0;
  const perRound = spec.updatesPerRound ?? 3;
  mkdirSync(path.join(dir, "reward_distributions"), { recursive: true });
  for (let round = 1; round <= spec.roundsWritten; round++) {
    const n = 4 + round;
    const pairs = Array.from({ length: n }, (_, i) => pair(rand, i, spec.evil === true && round === 1 && i === 0));
    await writeRoundFile(path.join(dir, "preference_replay", roundFileName(round)), round, pairs, "task");
    total += n;
    const target = Array.from({ length: 12 }, () => Math.round(rand() * 100) / 100 + round * 0.1);
    const comparator = Array.from({ length: 12 }, () => Math.round(rand() * 100) / 100);
    writeFileSync(
      path.join(dir, "reward_distributions", roundFileName(round)),
      JSON.stringify(
        distribution(round, spec.declaredRange ?? null, target, comparator, {
          target: pairs.map((p) => p.target_raw_reward!),
          comparator: pairs.map((p) => p.comparator_raw_reward!),
        }),
        null,
        2,
      ) + "\n",
    );
    const wins = pairs.filter((p) => p.comparator_raw_reward! > p.target_raw_reward!).length;
    log({
      kind: "round",
      step: update * 8,
      "iter/current_iteration": round,
      "iter/current_preference_pairs": n,
      "iter/total_preference_pairs": total,
      "iter/train_preference_pairs": n,
      // a round where nothing was compared logs NaN, which JSON writes as null
      "iter/comparator_win_rate": round === 2 ? null : wins / n,
      "iter/invalid_target_candidates": round === 1 ? 2 : 0,
      "iter/invalid_comparator_candidates": 0,
      "iter/target_reward_mean": 0.4 + round * 0.05,
      "iter/comparator_reward_mean": 0.45,
    });
    if (marlhf) {
      if (round > 1)
        log({
          kind: "reward",
          step: update * 8,
          round,
          "reward/heldout_accuracy": 0.55 + round * 0.02,
          "reward/heldout_margin": 0.2,
          "reward/heldout_pairs": n,
        });
      for (let e = 1; e <= 2; e++)
        log({
          kind: "reward",
          step: update * 8,
          round,
          "reward/epoch": e,
          "reward/loss": 0.7 - 0.05 * e,
          "reward/accuracy": 0.6 + 0.05 * e,
          "reward/margin": 0.1 * e,
          "reward/num_pairs": n,
        });
    }
    for (let u = 0; u < perRound; u++) {
      if (round === 1 && u === 0) log({ kind: "eval", step: 0, update: 0, "eval/turn_1/reward_mean": 0.5, "eval/turn_1/expected_return": 0.5 });
      update += 1;
      const base = { kind: "train", step: update * 8, round, epoch: 1, update };
      if (marlhf) {
        log({
          ...base,
          "agent_0/loss": rand() - 0.5,
          "agent_0/advantage_mean": 0,
          "agent_0/logprob_mean": -5 - rand(),
          "agent_1/loss": rand() - 0.5,
          "agent_1/advantage_mean": 0,
          "agent_1/logprob_mean": -6 - rand(),
          "turn_1/reward_mean": rand(),
          "turn_1/expected_return": rand(),
          "rl/advantage_std": 1,
          "agent_0/reference_kl_mean": 0.01 * update,
          "agent_1/reference_kl_mean": 0.02 * update,
        });
      } else {
        const m0 = rand() * 4 - 1;
        const m1 = rand() * 4 - 1;
        log({
          ...base,
          loss: 0.69 - 0.02 * update,
          "joint/margin": m0 + m1,
          "joint/accuracy": Math.min(1, 0.4 + 0.1 * update),
          "agent_0/margin": m0,
          "agent_1/margin": m1,
          "turn_1/reward_mean": 0.5,
          "turn_1/expected_return": 0.5,
        });
      }
    }
    if (spec.checkpointRound !== null && round <= spec.checkpointRound) {
      mkdirSync(path.join(dir, "checkpoints", `round_${String(round).padStart(4, "0")}`), { recursive: true });
      writeFileSync(path.join(dir, "checkpoints", "latest.json"), JSON.stringify({ round, dir: `round_${String(round).padStart(4, "0")}` }, null, 2) + "\n");
    }
  }
  if (spec.agentsSaved) {
    log({ kind: "eval", step: update * 8, update, "eval/turn_1/reward_mean": 0.7, "eval/turn_1/expected_return": 0.7 });
    mkdirSync(path.join(dir, "agents", "agent_0"), { recursive: true });
    mkdirSync(path.join(dir, "agents", "agent_1"), { recursive: true });
  }
  writeFileSync(path.join(dir, "metrics.jsonl"), lines.map((l) => JSON.stringify(l) + "\n").join(""));
  if (spec.halfLine === true)
    appendFileSync(path.join(dir, "metrics.jsonl"), `{"kind":"train","step":${update * 8 + 8},"round":${spec.roundsWritten},"epoch":1,"upd`);
  if (spec.lock !== undefined) writeFileSync(path.join(dir, "run.lock"), JSON.stringify({ ...spec.lock, started: "2025-01-01T00:00:00.000Z" }) + "\n");
}

export interface BaseRunSpec {
  trainer: "madpo" | "marlhf";
  pairs: number;
  agentsSaved: boolean;
  evil?: boolean;
}

export async function writeBaseRun(dir: string, spec: BaseRunSpec): Promise<void> {
  const rand = lcg(3);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, "config.json"),
    JSON.stringify({ trainer: spec.trainer, num_agents: 2, seed: 0, backend: "native", num_train_epochs: 1, output_dir: dir }, null, 2) + "\n",
  );
  const pairs = Array.from({ length: spec.pairs }, (_, i) => {
    const { target_raw_reward: _t, comparator_raw_reward: _c, raw_rewards: _r, ...base } = pair(rand, i, spec.evil === true && i === 0);
    return base;
  });
  await writePairsFile(path.join(dir, "preference_pairs.json"), pairs);
  const lines: Record<string, unknown>[] = [
    {
      kind: "collect",
      step: 0,
      "preference/num_pairs": spec.pairs,
      "preference/items_with_pairs": Math.ceil(spec.pairs / 2),
      "preference/items": 5,
      "preference/invalid_candidates": 0,
      "preference/candidate_reward_mean": 0.42,
    },
  ];
  if (spec.pairs > 0) {
    lines.push({ kind: "eval", step: 0, update: 0, "eval/turn_1/reward_mean": 1.5, "eval/turn_1/expected_return": 1.5 });
    if (spec.trainer === "marlhf")
      for (let e = 1; e <= 2; e++)
        lines.push({
          kind: "reward",
          step: 0,
          "reward/epoch": e,
          "reward/loss": 0.7 - 0.1 * e,
          "reward/accuracy": 0.5 + 0.1 * e,
          "reward/margin": 0.2 * e,
          "reward/num_pairs": spec.pairs,
        });
    for (let u = 1; u <= 4; u++) {
      lines.push(
        spec.trainer === "madpo"
          ? {
              kind: "train",
              step: u,
              epoch: 1,
              update: u,
              loss: 0.7 - 0.05 * u,
              "joint/margin": u,
              "joint/accuracy": 0.25 * u,
              "agent_0/margin": u / 2,
              "agent_1/margin": u / 2,
              "turn_1/reward_mean": 2,
              "turn_1/expected_return": 2,
            }
          : {
              kind: "train",
              step: u * 4,
              epoch: 1,
              update: u,
              "agent_0/loss": 0.1 * u,
              "agent_1/loss": -0.1 * u,
              "turn_1/reward_mean": 0.3,
              "turn_1/expected_return": 0.3,
              "rl/advantage_std": 1,
              "critic/value_loss": 0.5 / u,
            },
      );
    }
    if (spec.agentsSaved) lines.push({ kind: "eval", step: 4, update: 4, "eval/turn_1/reward_mean": 2, "eval/turn_1/expected_return": 2 });
  }
  writeFileSync(path.join(dir, "metrics.jsonl"), lines.map((l) => JSON.stringify(l) + "\n").join(""));
  if (spec.agentsSaved) mkdirSync(path.join(dir, "agents", "agent_0"), { recursive: true });
}

export const THIS_HOST = hostname();

/** A pid no process has: the highest pid Linux allows is 4194304. */
export const DEAD_PID = 4194303;

/** Counts occurrences of a substring. */
export function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

/** The markup of one <section id>. */
export function sectionOf(html: string, id: string): string {
  const start = html.indexOf(`<section id="${id}">`);
  if (start < 0) throw new Error(`no section ${id}`);
  return html.slice(start, html.indexOf("</section>", start) + "</section>".length);
}

const VOID = new Set(["meta", "br", "hr", "img", "input", "link", "!doctype"]);

/**
 * Checks that every tag is closed in order (a self-closing `<x/>` counts as closed): enough to
 * catch a broken template or unescaped text that opens a tag.
 */
export function assertBalanced(markup: string): void {
  const stack: string[] = [];
  const withoutText = markup.replace(/<style>[\s\S]*?<\/style>/g, "");
  for (const m of withoutText.matchAll(/<(\/?)([a-zA-Z!][a-zA-Z0-9-]*)[^>]*?(\/?)>/g)) {
    const [, close, name, selfClose] = m;
    const tag = name!.toLowerCase();
    if (VOID.has(tag) || selfClose === "/") continue;
    if (close === "/") {
      const top = stack.pop();
      if (top !== tag) throw new Error(`</${tag}> closes <${top}> at ${m.index}`);
    } else stack.push(tag);
  }
  if (stack.length > 0) throw new Error(`unclosed: ${stack.join(" > ")}`);
}

/** A label record as @pbrl/human-labels writes it; `at` is minutes after a fixed start. */
export function labelRecord(
  round: number,
  item: number,
  annotator: string,
  verdict: LabelRecord["verdict"],
  at: number,
  rationale: string | null = null,
): LabelRecord {
  return {
    comparison_id: `r${String(round).padStart(4, "0")}-i${String(item).padStart(4, "0")}-c0-3f2a9b1c`,
    round,
    item_index: item,
    item_id: `item-${item}`,
    winner: verdict === "target" || verdict === "comparator" ? verdict : null,
    verdict,
    shown_left: item % 2 === 0 ? "target" : "comparator",
    annotator,
    rationale,
    labelled_at: new Date(Date.UTC(2026, 11, 7, 2) + at * 60_000).toISOString(),
    scorer: "human",
  };
}

/** `<run>/human_labels/round_NNNN.jsonl`: records as JSON lines, or raw text for damaged files. */
export function writeLabelFile(runDir: string, round: number, content: readonly LabelRecord[] | string): string {
  const dir = path.join(runDir, "human_labels");
  mkdirSync(dir, { recursive: true });
  const file = labelFilePath(dir, round);
  writeFileSync(file, typeof content === "string" ? content : content.map((r) => JSON.stringify(r) + "\n").join(""));
  return file;
}

/**
 * Rewrites a round file the way a human-labelled round writes it: `scorer: "human"` at file level,
 * people's pairs with their annotators, agreement and rationales, the rest from the fallback reward.
 * Written as plain JSON so the fixture does not depend on preference-data's scorer enum.
 */
export function markRoundHuman(runDir: string, round: number, humanPairs: number): void {
  const file = path.join(runDir, "preference_replay", roundFileName(round));
  const body = JSON.parse(readFileSync(file, "utf8")) as { scorer?: string; pairs: Record<string, unknown>[] };
  body.scorer = "human";
  body.pairs = body.pairs.map((p, i) =>
    i < humanPairs ? { ...p, scorer: "human", annotators: ["ana", "ben"], agreement: 1, rationales: ["clearer"] } : { ...p, scorer: "task" },
  );
  writeFileSync(file, JSON.stringify(body, null, 2) + "\n");
}
