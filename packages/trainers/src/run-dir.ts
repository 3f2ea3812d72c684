/**
 * The run's folders — output_dir, and policy_checkpoint_dir / preference_replay_dir when set
 * elsewhere — decided before anything is written (planRunDir reads only), then opened under the
 * run lock (openRunDir). pbrl writes, replaces and removes only what its marker (run-marker.ts)
 * lists as its own: a file under one of a run's names that the marker does not list stops the
 * run, whatever overwrite_output_dir says; a folder pbrl did not create is never removed; and no
 * run folder may be, hold or lie inside what the run reads (models, datasets, modules).
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import * as path from "node:path";
import { isWithin, resolvedPath } from "@pbrl/core-tensor";
import { roundFileName } from "@pbrl/preference-data";
import { RUN_MARKER, readRunMarker, writeRunMarker } from "./run-marker.js";
import { acquireRunLock, LOCK_FILE } from "./run-lock.js";
import { roundDirName } from "./training-checkpoint.js";

export class RunDirError extends Error {
  override name = "RunDirError";
}

/** What a pbrl run writes in its output_dir (policy_checkpoint_dir and preference_replay_dir may move two of them). */
export const RUN_OUTPUTS = [
  "config.json",
  "metrics.jsonl",
  "preference_pairs.json",
  "agents",
  "checkpoints",
  "preference_replay",
  "reward_distributions",
  "reward_model",
  "human_labels",
  "tensorboard",
  "report.html",
] as const;

/** What a run keeps at its end (besides a checkpoint): a run holding one of these is not started again in place. */
const RESULTS = ["agents", "reward_model", "preference_pairs.json"];

export interface RunDirPlan {
  /** Continue from a checkpoint. */
  resume: boolean;
  /** Earlier run outputs this run replaces (overwrite_output_dir, or a run that never completed a round): only entries a marker lists. */
  replace: string[];
  /** People's picks of an earlier run that overwrite_output_dir replaces: renamed aside (HUMAN_LABELS_KEPT), never deleted. */
  setAside?: string[];
}

/** Folders of people's picks (human_labels, and earlier ones set aside): no run deletes them. */
const isPeoplesWork = (p: string) => /^human_labels($|\.before-)/.test(path.basename(p));

/** A file or folder the run reads, by the setting that names it. */
export interface RunInput {
  what: string;
  path: string;
}

export interface RunDirOptions {
  outputDir: string;
  /** policy_checkpoint_dir as configured; null or absent: output_dir/checkpoints. */
  policyCheckpointDir?: string | null;
  /** preference_replay_dir as configured; null or absent: output_dir/preference_replay. */
  preferenceReplayDir?: string | null;
  /** num_iterations: the rounds whose checkpoint folders and round files those two folders get. */
  rounds?: number;
  /** What the run reads (models, datasets, modules); no run folder may be one, lie inside one, or hold one where the run writes. */
  inputs?: readonly RunInput[];
  /** resume_from_checkpoint=true: continue output_dir's own latest checkpoint. */
  resumeLatest: boolean;
  /** resume_from_checkpoint given as a path: the run continues that checkpoint. */
  resumeCheckpoint?: string;
  /** The checkpoints folder whose latest.json resumeLatest continues from. */
  checkpointsDir?: string;
  overwrite: boolean;
  trainer: string;
  log?: (line: string) => void;
}

/** One folder the run writes in, with the names it writes there. */
interface RunFolder {
  dir: string;
  real: string;
  /** The settings naming it (one folder may serve several). */
  fields: string[];
  isOutputDir: boolean;
  claims: Set<string>;
}

/** What a run folder holds now. */
interface FolderState extends RunFolder {
  marker: ReadonlySet<string> | undefined | "damaged";
  /** Present entries the marker lists: an earlier pbrl run's. */
  ours: string[];
  /** Present entries under the names this run writes that the marker does not list. */
  clashes: string[];
  /** Present entries of neither kind (another run folder of this run aside). */
  others: string[];
}

/** The first path segment of `inner` under `outer` (inner strictly within outer). */
const firstSegment = (inner: string, outer: string) => path.relative(outer, inner).split(path.sep)[0]!;
const list = (names: readonly string[]) => names.slice(0, 6).join(", ") + (names.length > 6 ? `, … (${names.length} in all)` : "");

// Temporaries of pbrl's atomic writers (`.<name>.tmp-<pid>-<hex>`, `.<name>.old-<pid>-<hex>`).
const TEMP = /^\.(.+)\.(?:tmp|old)-(\d+)-[0-9a-f]{8}$/;

function runFolders(o: RunDirOptions): RunFolder[] {
  const rounds = Array.from({ length: o.rounds ?? 0 }, (_, i) => i + 1);
  const wanted: { field: string; dir: string; claims: string[] }[] = [{ field: "output_dir", dir: o.outputDir, claims: [...RUN_OUTPUTS] }];
  const extra = (field: string, dir: string | null | undefined, fallback: string, claims: string[]) => {
    if (dir !== null && dir !== undefined && resolvedPath(dir) !== resolvedPath(path.join(o.outputDir, fallback))) wanted.push({ field, dir, claims });
  };
  extra("policy_checkpoint_dir", o.policyCheckpointDir, "checkpoints", ["initial", "latest.json", ...rounds.map(roundDirName)]);
  extra("preference_replay_dir", o.preferenceReplayDir, "preference_replay", rounds.map(roundFileName));
  const folders: RunFolder[] = [];
  for (const w of wanted) {
    const real = resolvedPath(w.dir);
    const same = folders.find((f) => f.real === real);
    if (same !== undefined) {
      same.fields.push(w.field);
      for (const c of w.claims) same.claims.add(c);
    } else folders.push({ dir: path.resolve(w.dir), real, fields: [w.field], isOutputDir: w.field === "output_dir", claims: new Set(w.claims) });
  }
  return folders;
}

const fieldsOf = (f: RunFolder) => f.fields.join(" and ");

function inspect(f: RunFolder, all: readonly RunFolder[]): FolderState {
  if (existsSync(f.dir) && !statSync(f.dir).isDirectory()) {
    throw new RunDirError(`${fieldsOf(f)} ${f.dir} is a file, not a folder; choose a folder path for the run's outputs`);
  }
  const marker = readRunMarker(f.dir);
  const listed = marker instanceof Set ? marker : new Set<string>();
  const state: FolderState = { ...f, marker, ours: [], clashes: [], others: [] };
  if (!existsSync(f.dir)) return state;
  // in the order a run writes them (RUN_OUTPUTS, then rounds), the rest by name
  const order = new Map([...f.claims].map((n, i) => [n, i]));
  const rank = (n: string) => order.get(n) ?? order.size;
  // Stryker disable next-line EqualityOperator: readdir never gives two equal names, so a < b and a <= b agree (and a name not before another is after it)
  const names = readdirSync(f.dir).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
  for (const name of names) {
    const temp = TEMP.exec(name);
    if (name === RUN_MARKER || (f.isOutputDir && name === LOCK_FILE)) continue;
    if (temp !== null && (temp[1] === RUN_MARKER || f.claims.has(temp[1]!) || listed.has(temp[1]!))) continue;
    const real = resolvedPath(path.join(f.dir, name));
    if (listed.has(name)) state.ours.push(name);
    else if (f.claims.has(name)) state.clashes.push(name);
    else if (!all.some((g) => g !== f && isWithin(g.real, real))) state.others.push(name);
  }
  return state;
}

/** No run folder may be an input, lie inside one, or hold one where pbrl writes; nor lie inside another's entries. */
function checkLayout(states: readonly FolderState[], inputs: readonly RunInput[]): void {
  const writes = (s: FolderState, name: string) => s.claims.has(name) || (s.marker instanceof Set && s.marker.has(name));
  for (const input of inputs) {
    if (!existsSync(input.path)) continue; // a hub id, read from the hub cache
    const real = resolvedPath(input.path);
    for (const s of states) {
      const field = fieldsOf(s);
      if (real === s.real)
        throw new RunDirError(
          `${field} ${s.dir} is the ${input.what} ${input.path}, which the run reads; pbrl never writes its run files into an input. Choose a new folder for ${field}`,
        );
      if (isWithin(s.real, real))
        throw new RunDirError(
          `${field} ${s.dir} lies inside the ${input.what} ${input.path}, which the run reads; pbrl never writes into an input. Choose another ${field}, outside it`,
        );
      if (isWithin(real, s.real) && writes(s, firstSegment(real, s.real)))
        throw new RunDirError(
          `the ${input.what} ${input.path} lies inside ${path.join(s.dir, firstSegment(real, s.real))}, which this run writes (and overwrite_output_dir replaces); pbrl never writes over an input. Move it out of ${field} ${s.dir}, or choose another ${field}`,
        );
      // output_dir may hold the user's files beside the run's; the other folders only pbrl's
      if (isWithin(real, s.real) && !s.isOutputDir)
        throw new RunDirError(
          `${field} ${s.dir} holds the ${input.what} ${input.path}, which the run reads; pbrl writes ${field} only into a folder of its own. Choose a new or empty folder for ${field}`,
        );
    }
  }
  for (const a of states)
    for (const b of states) {
      // Stryker disable next-line ConditionalExpression,LogicalOperator: without it, a folder's own first segment is "" and an unrelated one's "..", names no folder claims and no marker may list, so nothing is refused either way
      if (a === b || !isWithin(b.real, a.real)) continue;
      const seg = firstSegment(b.real, a.real);
      if (writes(a, seg))
        throw new RunDirError(
          `${fieldsOf(b)} ${b.dir} lies inside ${path.join(a.dir, seg)}, which the run writes as ${fieldsOf(a)}'s ${seg} (and overwrite_output_dir replaces as a whole); choose a folder outside it`,
        );
    }
}

function savedTrainer(outputDir: string): string | undefined {
  let t: unknown;
  try {
    t = (JSON.parse(readFileSync(path.join(outputDir, "config.json"), "utf8")) as { trainer?: unknown }).trainer;
  } catch {
    // unreadable or damaged: no trainer
  }
  return typeof t === "string" ? t : undefined;
}

/** The refusal for files under a run's names that no marker lists: never a suggestion that would replace them. */
function clashError(s: FolderState, o: RunDirOptions, hasCheckpoint: boolean): RunDirError {
  const field = fieldsOf(s);
  const why =
    s.marker === "damaged"
      ? `its ${RUN_MARKER}, where pbrl lists what it wrote there, is damaged`
      : s.marker === undefined
        ? `it has no ${RUN_MARKER}, where pbrl lists what it wrote there`
        : `its ${RUN_MARKER}, where pbrl lists what it wrote there, does not list them`;
  const older =
    s.marker === undefined && hasCheckpoint && !o.resumeLatest
      ? ` If they are a run of a pbrl version older than that list, resume it with resume_from_checkpoint=true, or delete them yourself to start over.`
      : s.marker === undefined
        ? ` If they are an older pbrl version's run, delete them yourself to start over.`
        : "";
  return new RunDirError(
    `${o.resumeLatest && !hasCheckpoint ? `resume_from_checkpoint=true: ${o.checkpointsDir ?? o.outputDir} holds no checkpoint, and ` : ""}${field} ${s.dir} holds ${list(s.clashes)} under the names a run writes, and pbrl did not write them (${why}): they may be yours. pbrl never writes over or deletes files it did not write, with or without overwrite_output_dir. Choose another ${field}, or move them away.${older}`,
  );
}

/**
 * Reads the run folders and decides how the run uses them; writes nothing. A run that trained
 * nothing yet (no checkpoint, no saved agents or pairs: it failed or was killed in its first
 * round) is started again in place; one with results is only resumed, or replaced with
 * overwrite_output_dir=true. Either way only marker-listed entries are replaced.
 */
export function planRunDir(o: RunDirOptions): RunDirPlan {
  if (existsSync(o.outputDir) && !statSync(o.outputDir).isDirectory()) {
    throw new RunDirError(`output_dir ${o.outputDir} is a file, not a folder; choose a folder path for the run's outputs`);
  }
  const folders = runFolders(o);
  const states = folders.map((f) => inspect(f, folders));
  // Stryker disable next-line ArrayDeclaration: without inputs, the mutant's one entry, a string, has no path, and existsSync(undefined) is false: it is skipped
  checkLayout(states, o.inputs ?? []);
  const out = states.find((s) => s.isOutputDir)!;
  const hasCheckpoint = o.checkpointsDir !== undefined && existsSync(path.join(o.checkpointsDir, "latest.json"));
  const resuming = o.resumeCheckpoint !== undefined || (o.resumeLatest && hasCheckpoint);
  // Resuming a run of a pbrl version without the marker: its own checkpoint shows the folders are a
  // run's, so the run may write on in them (openRunDir lists nothing there, so nothing is ever deleted).
  const adopts =
    resuming &&
    // resuming without resumeLatest: resumeCheckpoint is set
    (o.resumeLatest || (o.checkpointsDir !== undefined && isWithin(resolvedPath(o.resumeCheckpoint!), resolvedPath(o.checkpointsDir))));
  for (const s of states) if (s.clashes.length > 0 && !(adopts && s.marker === undefined)) throw clashError(s, o, hasCheckpoint);
  if (resuming) return { resume: true, replace: [] };

  for (const s of states) {
    if (s.isOutputDir || s.others.length === 0) continue;
    const field = fieldsOf(s);
    throw new RunDirError(
      `${field} ${s.dir} holds ${list(s.others)}, which pbrl did not write there; a fresh run writes there only into a new or empty folder, or one holding nothing but an earlier pbrl run's files, and never deletes anyone else's. Choose a new or empty folder for ${field}, or leave it unset (the run then writes under output_dir)`,
    );
  }
  const ours = states.flatMap((s) => s.ours.map((n) => path.join(s.dir, n)));
  const names = (ps: readonly string[]) => list(ps.map((p) => (isWithin(p, path.resolve(o.outputDir)) ? path.relative(o.outputDir, p) : p)));
  if (ours.length === 0) {
    if (o.resumeLatest)
      throw new RunDirError(`resume_from_checkpoint=true: ${o.outputDir} holds no run to resume; check output_dir, or start without resume_from_checkpoint`);
    return { resume: false, replace: [] };
  }
  // People's picks outlive a replaced run: a restarted one finds them where they were (a pick applies
  // only to the very texts it was made on), an overwritten one's are renamed aside.
  const replace = ours.filter((p) => !isPeoplesWork(p));
  const labels = ours.filter((p) => path.basename(p) === "human_labels");
  if (o.overwrite && !o.resumeLatest) return { resume: false, replace, setAside: labels };
  const trainer = out.ours.includes("config.json") ? savedTrainer(o.outputDir) : undefined;
  const results = out.ours.filter((n) => RESULTS.includes(n));
  // A run killed before it wrote config.json (its replay or checkpoint folder made, nothing listed
  // trained) is one that completed no round too: its entries are on pbrl's list.
  const startedHere = trainer === o.trainer || !out.ours.includes("config.json");
  if (!hasCheckpoint && results.length === 0 && startedHere) {
    o.log?.(
      `pbrl: ${o.outputDir} holds a ${o.trainer} run that completed no round (${names(ours)}); starting it again from the beginning${labels.length > 0 ? " (keeping human_labels: the picks saved there are not asked again)" : ""}`,
    );
    return { resume: false, replace };
  }
  if (o.resumeLatest) {
    throw new RunDirError(
      `resume_from_checkpoint=true: ${o.outputDir} has no checkpoint to resume (${path.join(o.checkpointsDir ?? o.outputDir, "latest.json")} is missing) and holds ${trainer === o.trainer ? "a finished run" : trainer === undefined ? "files of a run whose config.json is missing or damaged" : `a ${trainer} run, not a ${o.trainer} run`} (${names(ours)}); choose another output_dir, or start without resume_from_checkpoint and with overwrite_output_dir=true to replace those files of pbrl's (nothing else is touched)`,
    );
  }
  const holding = states.filter((s) => s.ours.length > 0);
  const where = holding.map((s) => `${fieldsOf(s)} ${s.isOutputDir ? o.outputDir : s.dir}`).join(" and ");
  throw new RunDirError(
    `${where} already ${holding.length > 1 ? "hold" : "holds"} a run's results (${names(ours)}); pbrl does not write a new run over them. Resume that run with resume_from_checkpoint=true, choose another output_dir, or set overwrite_output_dir=true to replace those files, which pbrl wrote (nothing else is touched)`,
  );
}

/** Removes what atomic writes of killed runs left behind: only pbrl's temporary names of its own entries, only of other processes. */
function removeStaleTemps(dir: string, own: (name: string) => boolean): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const m = TEMP.exec(e.name);
    // Stryker disable next-line BooleanLiteral: readdir has just listed it, so force matters only if another process removed it meanwhile
    if (m !== null && own(m[1]!) && Number(m[2]) !== process.pid) rmSync(path.join(dir, e.name), { recursive: true, force: true });
    else if (m === null && own(e.name) && e.isDirectory()) removeStaleTemps(path.join(dir, e.name), () => true);
  }
}

/** Every listed entry that still exists (report.html stays listed: `pbrl report` writes it later). */
function pruneMarker(f: RunFolder): void {
  const listed = readRunMarker(f.dir);
  if (!(listed instanceof Set)) return;
  const kept = [...listed].filter((n) => (f.isOutputDir && n === "report.html") || lstatExists(path.join(f.dir, n)));
  writeRunMarker(f.dir, kept);
}

const lstatExists = (p: string) => {
  try {
    lstatSync(p);
  } catch {
    return false;
  }
  return true;
};

/**
 * Creates the run folders, takes the run lock, clears what killed runs left half-written,
 * removes the earlier outputs the plan replaces, and lists in each folder's marker the names
 * this run writes there, before it writes any. Returns the function that trims the markers to
 * what exists and releases the lock.
 */
export function openRunDir(o: RunDirOptions, plan: RunDirPlan): () => void {
  mkdirSync(o.outputDir, { recursive: true });
  const release = acquireRunLock(o.outputDir, o.log);
  const folders = runFolders(o);
  try {
    // Checked again under the lock: another run may have started between planning and now.
    const again = planRunDir({ ...o, log: undefined });
    if (again.resume !== plan.resume || again.replace.some((p) => !plan.replace.includes(p))) {
      throw new RunDirError(`output_dir ${o.outputDir} received another run's files while this run was starting; choose another output_dir`);
    }
    for (const f of folders) {
      mkdirSync(f.dir, { recursive: true });
      const listed = readRunMarker(f.dir);
      const own = (n: string) => n === RUN_MARKER || f.claims.has(n) || (listed instanceof Set && listed.has(n));
      removeStaleTemps(f.dir, own);
    }
    for (const p of plan.replace) rmSync(p, { recursive: true, force: true });
    const setAside = (plan.setAside ?? []).map((p) => {
      const to = `${p}.before-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      renameSync(p, to);
      return to;
    });
    for (const f of folders) {
      const listed = readRunMarker(f.dir);
      // Stryker disable next-line LogicalOperator,ConditionalExpression: a name set aside in another folder names nothing in this one, and the lstatExists filter below drops it
      for (const to of setAside) if (path.dirname(to) === f.dir && listed instanceof Set) listed.add(path.basename(to));
      // A resumed run of a pbrl without the marker writes on in its folder as that pbrl did, but lists
      // nothing there: which of its entries are that run's is unknown, so none may ever be deleted.
      // (Only such a folder has clashes here: planRunDir, run again above, refuses them in any other.)
      if (inspect(f, folders).clashes.length > 0) continue;
      const kept = listed instanceof Set ? [...listed].filter((n) => lstatExists(path.join(f.dir, n))) : [];
      writeRunMarker(f.dir, [...kept, ...f.claims]);
    }
    if (plan.replace.length > 0)
      o.log?.(`pbrl: replaced the earlier run's ${plan.replace.map((p) => path.relative(o.outputDir, p) || p).join(", ")} in ${o.outputDir}`);
    for (const to of setAside) o.log?.(`pbrl: kept the earlier run's picks as ${to}`);
  } catch (err) {
    release();
    throw err;
  }
  return () => {
    try {
      for (const f of folders) pruneMarker(f);
    } finally {
      release();
    }
  };
}
