/**
 * Reads a run folder of any of the four trainers — finished, running, or stopped mid-round — into
 * RunData. Nothing here throws for a missing or damaged file: it is listed in `problems` and the
 * report says what is missing. Only a path that holds no run at all is an error.
 */
import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { ReportError } from "../errors.js";
import { TRAINERS, type MetricsData, type PairSet, type RunData, type TrainerName } from "../run-data.js";
import { parseRewardDistribution, type RewardDistribution } from "./distribution-file.js";
import { readHumanLabels } from "./label-files.js";
import { emptyMetrics, readMetricsFile } from "./metrics-file.js";
import { readPairSet } from "./pair-files.js";
import { readRunLock } from "./run-lock.js";
import { runStatus } from "./run-status.js";

export interface ReadRunOptions {
  /** Pairs kept as samples per round file (and from preference_pairs.json); default 3. */
  samplesPerRound?: number;
}

const ROUND_FILE = /^iteration_(\d{4,})\.json$/;

async function readText(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Round files of a folder, by round: [round, path]. */
async function roundFiles(dir: string): Promise<[number, string][]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  return names
    .flatMap((n): [number, string][] => {
      const m = ROUND_FILE.exec(n);
      return m === null ? [] : [[Number(m[1]), path.join(dir, n)]];
    })
    .sort((a, b) => a[0] - b[0]);
}

/**
 * A folder the config moved (preference_replay_dir, policy_checkpoint_dir): as recorded, else
 * relative to the run folder; the default inside the run folder when unset.
 */
function configuredDir(dir: string, value: unknown, fallback: string): string {
  if (typeof value !== "string" || value === "") return path.join(dir, fallback);
  if (path.isAbsolute(value)) return value;
  const candidates = [path.resolve(value), path.resolve(dir, value)];
  return candidates.find((c) => existsSync(c)) ?? candidates[0]!;
}

function inferTrainer(metrics: MetricsData, iterative: boolean): TrainerName | null {
  const marlhf = metrics.byKind.reward.length > 0;
  if (iterative) return marlhf ? "marlhf_iter" : "madpo_iter";
  if (metrics.byKind.collect.length > 0) return marlhf ? "marlhf" : "madpo";
  return null;
}

function positiveInt(v: unknown): number | null {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : null;
}

export async function readRun(dir: string, options: ReadRunOptions = {}): Promise<RunData> {
  const samples = options.samplesPerRound ?? 3;
  const stat = await fs.stat(dir).catch(() => undefined);
  if (stat === undefined) throw new ReportError(`no run folder at ${dir}: it does not exist`);
  if (!stat.isDirectory()) throw new ReportError(`${dir} is a file; give the run's output_dir (the folder holding config.json and metrics.jsonl)`);
  const problems: string[] = [];
  const files: RunData["files"] = [];

  // config.json
  let config: Record<string, unknown> | null = null;
  const configText = await readText(path.join(dir, "config.json"));
  if (configText !== undefined) {
    try {
      const parsed: unknown = JSON.parse(configText);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) config = parsed as Record<string, unknown>;
      else problems.push("config.json is not a JSON object");
    } catch (err) {
      problems.push(`config.json is not valid JSON: ${(err as Error).message}`);
    }
  }
  files.push({
    name: "config.json",
    found: configText !== undefined,
    detail: configText === undefined ? "missing: the config table is empty" : config === null ? "unreadable" : `${Object.keys(config).length} fields`,
  });

  // metrics.jsonl
  const metricsRead = await readMetricsFile(path.join(dir, "metrics.jsonl"));
  const metrics = metricsRead ?? emptyMetrics();
  if (metrics.partialLastLine)
    problems.push("metrics.jsonl ends in a half-written line (the run is writing it, or was killed while writing it); it is left out");
  for (const s of metrics.skipped.slice(0, 10)) problems.push(`metrics.jsonl line ${s.line}: ${s.reason}; left out`);
  if (metrics.skipped.length > 10) problems.push(`metrics.jsonl: ${metrics.skipped.length - 10} more unreadable lines left out`);
  files.push({
    name: "metrics.jsonl",
    found: metricsRead !== undefined,
    detail: metricsRead === undefined ? "missing: no curves" : `${metrics.records.length} records`,
  });

  // round files (iterative trainers)
  const replayDir = configuredDir(dir, config?.["preference_replay_dir"], "preference_replay");
  const rounds: PairSet[] = [];
  for (const [iteration, file] of await roundFiles(replayDir)) rounds.push(await readPairSet(file, iteration, samples));
  for (const r of rounds) problems.push(...r.problems);
  files.push({
    name: path.relative(dir, replayDir) || replayDir,
    found: rounds.length > 0,
    detail: rounds.length === 0 ? "no round files" : `${rounds.length} round files`,
  });

  // human_labels/ (preference_labeler "human"): listed only when there are label files, as most runs have none
  const humanLabels = await readHumanLabels(path.join(dir, "human_labels"));
  if (humanLabels !== null) {
    for (const f of humanLabels.files) if (f.error !== null) problems.push(`${f.error}; round ${f.round}'s labels are left out`);
    const labels = humanLabels.files.reduce((n, f) => n + f.records.length, 0);
    files.push({ name: "human_labels", found: true, detail: `${humanLabels.files.length} label files, ${labels} labels` });
  }

  // reward distributions
  const distributions: RewardDistribution[] = [];
  for (const [iteration, file] of await roundFiles(path.join(dir, "reward_distributions"))) {
    try {
      const d = parseRewardDistribution(JSON.parse(await fs.readFile(file, "utf8")));
      if (d.iteration !== iteration) problems.push(`${file} says iteration ${d.iteration}, its name says ${iteration}`);
      distributions.push(d);
    } catch (err) {
      problems.push(`${file}: ${(err as Error).message}; its round has no histograms`);
    }
  }
  files.push({
    name: "reward_distributions",
    found: distributions.length > 0,
    detail: distributions.length === 0 ? "no distribution files" : `${distributions.length} rounds`,
  });

  // preference_pairs.json (base trainers)
  const pairsFile = path.join(dir, "preference_pairs.json");
  const pairs = existsSync(pairsFile) ? await readPairSet(pairsFile, null, samples) : null;
  if (pairs !== null) problems.push(...pairs.problems);
  files.push({ name: "preference_pairs.json", found: pairs !== null, detail: pairs === null ? "missing" : `${pairs.numPairs} pairs` });

  // checkpoints/latest.json
  const ckptDir = configuredDir(dir, config?.["policy_checkpoint_dir"], "checkpoints");
  let checkpoint: RunData["checkpoint"] = null;
  const latestText = await readText(path.join(ckptDir, "latest.json"));
  if (latestText !== undefined) {
    try {
      const l = JSON.parse(latestText) as { round?: unknown; dir?: unknown };
      const round = typeof l.round === "number" && Number.isInteger(l.round) && l.round >= 0 ? l.round : null;
      if (round !== null && typeof l.dir === "string") checkpoint = { round, dir: l.dir };
      else problems.push(`${path.join(ckptDir, "latest.json")} does not name a round and folder`);
    } catch (err) {
      problems.push(`${path.join(ckptDir, "latest.json")} is not valid JSON: ${(err as Error).message}`);
    }
  }
  files.push({
    name: `${path.relative(dir, ckptDir) || ckptDir}/latest.json`,
    found: latestText !== undefined,
    detail: checkpoint === null ? "no checkpoint" : `after round ${checkpoint.round} (${checkpoint.dir})`,
  });

  const agentsSaved = existsSync(path.join(dir, "agents", "agent_0"));
  files.push({ name: "agents", found: agentsSaved, detail: agentsSaved ? "final agents saved" : "not saved (yet)" });
  const lock = await readRunLock(path.join(dir, "run.lock"));

  if (configText === undefined && metricsRead === undefined && rounds.length === 0 && pairs === null && latestText === undefined && !agentsSaved) {
    throw new ReportError(
      `${dir} holds no pbrl run: none of config.json, metrics.jsonl, preference_replay/, preference_pairs.json, checkpoints/ or agents/ is there`,
    );
  }

  const configured = config?.["trainer"];
  const known = typeof configured === "string" && (TRAINERS as readonly string[]).includes(configured) ? (configured as TrainerName) : null;
  if (typeof configured === "string" && known === null)
    problems.push(`config.json names trainer ${JSON.stringify(configured)}, which this report does not know`);
  const iterative = rounds.length > 0 || checkpoint !== null || metrics.byKind.round.length > 0 || distributions.length > 0;
  const trainer = known ?? inferTrainer(metrics, iterative);
  const numIterations = positiveInt(config?.["num_iterations"]);
  const status = runStatus({
    trainer,
    numIterations,
    checkpointRound: checkpoint?.round ?? null,
    agentsSaved,
    lock,
    metrics,
    roundFiles: rounds.map((r) => r.iteration!),
  });
  return {
    dir,
    trainer,
    trainerInferred: known === null && trainer !== null,
    config,
    metrics,
    rounds,
    pairs,
    humanLabels,
    distributions,
    checkpoint,
    agentsSaved,
    lock,
    status,
    files,
    problems,
  };
}
