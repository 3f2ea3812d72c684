// Property test of the run-folder rules. Random layouts — output_dir, policy_checkpoint_dir and
// preference_replay_dir new, holding the user's files, equal to an input, inside one or around one,
// equal to output_dir or inside it, reached through symlinks; an earlier run of a pbrl without the
// marker, or none — go through a few runs each (fresh or resumed, overwrite on or off, some killed
// half-way, the user adding files between them). planRunDir and openRunDir decide; a simulated
// run then writes what a real one writes there, the way it writes it (atomic renames, folders
// replaced whole, agents and metrics written in place). Whatever happens, no file pbrl did not
// write is ever removed or changed, a refusal changes nothing, and a refusal that suggests
// overwrite_output_dir=true is safe to follow.
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openRunDir, planRunDir, RunDirError, type RunDirOptions } from "../src/run-dir.js";

const OUT_CHOICES = ["out", "model", "insideModel", "linkModel", "root", "user", "linkUser"] as const;
const DIR_CHOICES = [null, "default", "new", "shared", "empty", "user", "linkUser", "linkEmpty", "model", "root", "output", "outFree", "outClaimed"] as const;
/** What the user may have in a fresh "out" before any run: their own files, some under a run's names, one that looks like a temporary. */
const OUT_USER_FILES = ["notes.txt", "config.json", "metrics.jsonl", "agents/mine.bin", "tensorboard/ev", ".notes.txt.tmp-1-0123abcd", "link:agents"] as const;
/** Files the user adds between runs (relative to root; "out/" is output_dir). Those under a run's names only after a run that was not killed. */
const LATER_FILES = ["out/later.txt", "ckpt/later.txt", "replay/later.txt", "shared/later.txt", "out/tensorboard/mine", "out/reward_model/mine"] as const;
const UNDER_RUN_NAMES = (f: string) => /^out\/(tensorboard|reward_model)\//.test(f);

type DirChoice = (typeof DIR_CHOICES)[number];
interface Step {
  resume: boolean;
  overwrite: boolean;
  killAfter: number | null;
  later: string[];
}
interface Scenario {
  trainer: "madpo_iter" | "madpo";
  out: (typeof OUT_CHOICES)[number];
  outFiles: string[];
  legacy: boolean;
  replay: DirChoice;
  ckpt: DirChoice;
  rounds: number;
  steps: Step[];
}

// Weighted towards layouts a run may use, so that runs, resumes and overwrites happen as often as refusals.
const weighted = <T>(pairs: [T, number][]) => fc.oneof(...pairs.map(([v, weight]) => ({ weight, arbitrary: fc.constant(v) })));
const dirChoice = weighted<DirChoice>(DIR_CHOICES.map((c) => [c, c === null ? 8 : ["new", "shared", "outFree", "output", "default"].includes(c) ? 2 : 1]));
const scenario: fc.Arbitrary<Scenario> = fc.record({
  trainer: weighted<Scenario["trainer"]>([
    ["madpo_iter", 3],
    ["madpo", 1],
  ]),
  out: weighted<Scenario["out"]>(OUT_CHOICES.map((c) => [c, c === "out" ? 10 : 1])),
  outFiles: fc.oneof({ weight: 2, arbitrary: fc.constant<string[]>([]) }, { weight: 1, arbitrary: fc.subarray([...OUT_USER_FILES]) }),
  legacy: fc.boolean(),
  replay: dirChoice,
  ckpt: dirChoice,
  rounds: fc.integer({ min: 1, max: 3 }),
  steps: fc.array(
    fc.record({
      resume: fc.boolean(),
      overwrite: fc.boolean(),
      killAfter: fc.option(fc.nat(14), { freq: 3 }),
      later: fc.oneof({ weight: 3, arbitrary: fc.constant<string[]>([]) }, { weight: 1, arbitrary: fc.subarray([...LATER_FILES]) }),
    }),
    { minLength: 2, maxLength: 4 },
  ),
});

/** Every file, folder and link under `dir` (symlinks not followed), with content hashes. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out.set(p, `link:${readlinkSync(p)}`);
      else if (st.isDirectory()) {
        out.set(p, "dir");
        walk(p);
      } else out.set(p, createHash("sha256").update(readFileSync(p)).digest("hex"));
    }
  };
  walk(dir);
  return out;
}

function write(p: string, text: string): void {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, text);
}

/** The layout: inputs, a user's folder, empty folders, links, and output_dir's starting content. */
function layout(root: string, s: Scenario) {
  write(path.join(root, "model", "config.json"), '{"model_type": "llama"}');
  write(path.join(root, "model", "model.safetensors"), "weights");
  write(path.join(root, "data", "train.jsonl"), '{"prompt": "x"}\n');
  write(path.join(root, "reward.mjs"), "export const reward_func = () => [];\n");
  write(path.join(root, "user", "notes.txt"), "user notes");
  write(path.join(root, "user", "sub", "x.bin"), "user data");
  mkdirSync(path.join(root, "empty"));
  mkdirSync(path.join(root, "empty2"));
  symlinkSync(path.join(root, "model"), path.join(root, "link-model"));
  symlinkSync(path.join(root, "user"), path.join(root, "link-user"));
  symlinkSync(path.join(root, "empty2"), path.join(root, "link-empty"));
  const out = {
    out: path.join(root, "out"),
    model: path.join(root, "model"),
    insideModel: path.join(root, "model", "run"),
    linkModel: path.join(root, "link-model"),
    root,
    user: path.join(root, "user"),
    linkUser: path.join(root, "link-user"),
  }[s.out];
  if (s.out === "out") {
    for (const f of s.outFiles) {
      if (f === "link:agents") {
        if (!s.outFiles.includes("agents/mine.bin")) {
          mkdirSync(out, { recursive: true });
          symlinkSync(path.join(root, "user"), path.join(out, "agents"));
        }
      } else if (!(s.legacy && ["config.json", "metrics.jsonl"].includes(f))) write(path.join(out, f), `user's ${f}`);
    }
  }
  const dir = (c: DirChoice, name: string): string | null =>
    c === null
      ? null
      : {
          default: path.join(out, name === "ckpt" ? "checkpoints" : "preference_replay"),
          new: path.join(root, name),
          shared: path.join(root, "shared"),
          empty: path.join(root, "empty"),
          user: path.join(root, "user"),
          linkUser: path.join(root, "link-user"),
          linkEmpty: path.join(root, "link-empty"),
          model: path.join(root, "model"),
          root,
          output: out,
          outFree: path.join(out, `my-${name}`),
          outClaimed: path.join(out, "agents", name),
        }[c];
  const iter = s.trainer === "madpo_iter";
  return { out, ckpt: iter ? dir(s.ckpt, "ckpt") : null, replay: iter ? dir(s.replay, "replay") : null };
}

/** An earlier run of a pbrl without the marker, in output_dir (pbrl's files, but nothing says so). */
function legacyRun(out: string, trainer: string): void {
  write(path.join(out, "config.json"), JSON.stringify({ trainer }));
  write(path.join(out, "metrics.jsonl"), "{}\n");
  if (trainer === "madpo") write(path.join(out, "preference_pairs.json"), "[]");
  else {
    write(path.join(out, "checkpoints", "round_0001", "state.json"), "{}");
    write(path.join(out, "checkpoints", "latest.json"), JSON.stringify({ round: 1, dir: "round_0001" }));
    write(path.join(out, "preference_replay", "iteration_0001.json"), "{}");
  }
}

const pad = (r: number) => String(r).padStart(4, "0");

/** What a run writes, in order, the way it writes it; returns the writes as thunks. */
function runWrites(trainer: string, dirs: { out: string; ckpt: string; replay: string }, rounds: number, fromRound: number): (() => void)[] {
  const atomic = (p: string, text: string) => () => {
    mkdirSync(path.dirname(p), { recursive: true });
    const tmp = path.join(path.dirname(p), `.${path.basename(p)}.tmp-${process.pid}-0123abcd`);
    writeFileSync(tmp, text);
    renameSync(tmp, p);
  };
  const inPlace = (p: string, text: string) => () => write(p, text);
  const wholeDir = (p: string, file: string) => () => {
    rmSync(p, { recursive: true, force: true });
    write(path.join(p, file), "pbrl");
  };
  const { out, ckpt, replay } = dirs;
  const w: (() => void)[] = [atomic(path.join(out, "config.json"), JSON.stringify({ trainer })), inPlace(path.join(out, "metrics.jsonl"), "{}\n")];
  if (trainer === "madpo") w.push(atomic(path.join(out, "preference_pairs.json"), "[]"));
  else {
    if (fromRound === 1) w.push(wholeDir(path.join(ckpt, "initial"), "agents/agent_0/model.safetensors"));
    for (let r = fromRound; r <= rounds; r++)
      w.push(
        atomic(path.join(replay, `iteration_${pad(r)}.json`), "{}"),
        atomic(path.join(out, "reward_distributions", `iteration_${pad(r)}.json`), "{}"),
        wholeDir(path.join(ckpt, `round_${pad(r)}`), "state.json"),
        atomic(path.join(ckpt, "latest.json"), JSON.stringify({ round: r, dir: `round_${pad(r)}` })),
      );
  }
  w.push(inPlace(path.join(out, "agents", "agent_0", "model.safetensors"), "trained"));
  return w;
}

describe("run folders, property-based", () => {
  it("random layouts × overwrite on/off × fresh/resume × killed or not: no file pbrl did not write is ever removed or changed", () => {
    const seen = { opened: 0, refused: 0, replaced: 0, resumed: 0, followedAdvice: 0 };
    fc.assert(
      fc.property(scenario, (s) => {
        const root = mkdtempSync(path.join(tmpdir(), "pbrl-runprop-"));
        try {
          const d = layout(root, s);
          if (s.legacy && s.out === "out") legacyRun(d.out, s.trainer);
          // Everything there now is the user's, but an older pbrl's run: a resume writes on in it, so its
          // files may change, but none may ever be removed.
          const users = snapshot(root);
          const legacy = new Set(
            [...users.keys()].filter(
              (p) => s.legacy && s.out === "out" && /[/\\]out[/\\](config\.json|metrics\.jsonl|preference_pairs\.json|checkpoints|preference_replay)/.test(p),
            ),
          );
          let resumed = false;
          const check = (when: string) => {
            const now = snapshot(root);
            for (const [p, v] of users)
              if (!now.has(p) || (now.get(p) !== v && !(legacy.has(p) && resumed)))
                throw new Error(
                  `${when}: the ${legacy.has(p) ? "older pbrl run's" : "user's"} ${path.relative(root, p)} was ${now.has(p) ? "changed" : "removed"}\n${JSON.stringify(s)}`,
                );
          };
          const inputs = [
            { what: "agent_model", path: path.join(root, "model") },
            { what: "train_dataset", path: path.join(root, "data", "train.jsonl") },
            { what: "reward_func", path: path.join(root, "reward.mjs") },
          ];
          const iter = s.trainer === "madpo_iter";
          const ckptRoot = d.ckpt ?? path.join(d.out, "checkpoints");
          const options = (step: Step): RunDirOptions => ({
            outputDir: d.out,
            ...(iter ? { policyCheckpointDir: d.ckpt, preferenceReplayDir: d.replay, rounds: s.rounds, checkpointsDir: ckptRoot } : {}),
            inputs,
            resumeLatest: iter && step.resume,
            overwrite: step.overwrite,
            trainer: s.trainer,
          });
          let lastKilled = false;
          const attempt = (step: Step, label: string): void => {
            const o = options(step);
            const before = snapshot(root);
            let plan;
            try {
              plan = planRunDir(o);
            } catch (err) {
              if (!(err instanceof RunDirError)) throw err;
              seen.refused++;
              expect(snapshot(root)).toEqual(before);
              // advice to overwrite must be safe to follow
              if (/overwrite_output_dir=true to replace/.test(err.message) && !step.overwrite) {
                seen.followedAdvice++;
                attempt({ ...step, resume: false, overwrite: true }, `${label}, following "${err.message.slice(0, 80)}…"`);
              }
              return;
            }
            const release = openRunDir(o, plan);
            seen.opened++;
            if (plan.replace.length > 0) seen.replaced++;
            if (plan.resume) {
              seen.resumed++;
              resumed = true;
            }
            check(`${label}, after opening`);
            const from = plan.resume ? (JSON.parse(readFileSync(path.join(ckptRoot, "latest.json"), "utf8")) as { round: number }).round + 1 : 1;
            const writes = runWrites(s.trainer, { out: d.out, ckpt: ckptRoot, replay: d.replay ?? path.join(d.out, "preference_replay") }, s.rounds, from);
            const n = step.killAfter === null ? writes.length : Math.min(step.killAfter, writes.length);
            for (const w of writes.slice(0, n)) w();
            check(`${label}, after the run wrote its files`);
            lastKilled = n < writes.length;
            // killed: no release, and the next run finds a dead process's lock (here: none)
            if (lastKilled) rmSync(path.join(d.out, "run.lock"), { force: true });
            else release();
          };
          s.steps.forEach((step, i) => {
            attempt(step, `step ${i + 1}`);
            check(`step ${i + 1}`);
            for (const f of step.later) {
              if (lastKilled && UNDER_RUN_NAMES(f)) continue;
              const wanted = f.startsWith("out/") ? path.join(d.out, f.slice(4)) : path.join(root, f);
              const parent = path.dirname(wanted);
              // into a folder that exists, or a new folder of the user's directly in output_dir
              if (!existsSync(parent)) {
                if (!f.startsWith("out/") || !existsSync(d.out)) continue;
                mkdirSync(parent);
                users.set(realpathSync(parent), "dir");
              }
              const p = path.join(realpathSync(parent), path.basename(wanted));
              if (existsSync(p)) continue;
              write(p, "added later");
              users.set(p, snapshot(path.dirname(p)).get(p)!);
            }
          });
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      }),
      { numRuns: 300 },
    );
    console.log(JSON.stringify(seen));
    // the property saw runs of every kind, and refusals
    expect(seen.opened).toBeGreaterThan(50);
    expect(seen.refused).toBeGreaterThan(50);
    expect(seen.replaced).toBeGreaterThan(10);
    expect(seen.resumed).toBeGreaterThan(10);
    expect(seen.followedAdvice).toBeGreaterThan(5);
  }, 120_000);
});
