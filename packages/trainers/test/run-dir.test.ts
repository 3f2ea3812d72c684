// output_dir decisions on real folders: what a run may replace (only what pbrl's marker lists),
// what it refuses (anyone else's files, inputs, folders inside inputs), and how it opens a folder.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openRunDir, planRunDir, RUN_OUTPUTS, RunDirError, type RunDirOptions } from "../src/run-dir.js";
import { readRunMarker, RUN_MARKER, writeRunMarker } from "../src/run-marker.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-rundir-"));
const opts = (outputDir: string, more: Partial<RunDirOptions> = {}): RunDirOptions => ({
  outputDir,
  checkpointsDir: path.join(outputDir, "checkpoints"),
  resumeLatest: false,
  overwrite: false,
  trainer: "madpo_iter",
  rounds: 4,
  ...more,
});

/** A finished run's files: config, metrics, a checkpoint and saved agents, and one file of the user's. */
function finishedRun(dir: string, marked = true): void {
  mkdirSync(path.join(dir, "checkpoints", "round_0004"), { recursive: true });
  mkdirSync(path.join(dir, "agents", "agent_0"), { recursive: true });
  writeFileSync(path.join(dir, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
  writeFileSync(path.join(dir, "metrics.jsonl"), "{}\n");
  writeFileSync(path.join(dir, "checkpoints", "latest.json"), JSON.stringify({ round: 4, dir: "round_0004" }));
  writeFileSync(path.join(dir, "notes.txt"), "mine");
  if (marked) writeRunMarker(dir, RUN_OUTPUTS);
}

const deadPid = () => spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
const basenames = (ps: readonly string[]) => ps.map((p) => path.basename(p)).sort();

describe("planRunDir (reads only)", () => {
  it("a fresh run into a folder holding a finished run is refused, naming its files and the three ways out", () => {
    const d = tmp();
    finishedRun(d);
    expect(() => planRunDir(opts(d))).toThrow(RunDirError);
    expect(() => planRunDir(opts(d))).toThrow(
      /already holds a run's results \(config\.json, metrics\.jsonl, agents, checkpoints\).*resume_from_checkpoint=true.*another output_dir.*overwrite_output_dir=true/,
    );
    expect(basenames(planRunDir(opts(d, { overwrite: true })).replace)).toEqual(["agents", "checkpoints", "config.json", "metrics.jsonl"]);
    expect(planRunDir(opts(d, { resumeLatest: true }))).toEqual({ resume: true, replace: [] });
  });

  it("a run that completed no round is started again in place; another trainer's is not", () => {
    const d = tmp();
    writeFileSync(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    writeFileSync(path.join(d, "metrics.jsonl"), "");
    writeRunMarker(d, RUN_OUTPUTS);
    expect(planRunDir(opts(d)).replace.length).toBe(2);
    expect(planRunDir(opts(d, { resumeLatest: true })).resume).toBe(false);
    expect(() => planRunDir(opts(d, { trainer: "marlhf_iter" }))).toThrow(RunDirError);
    expect(() => planRunDir(opts(d, { trainer: "marlhf_iter", resumeLatest: true }))).toThrow(/a madpo_iter run, not a marlhf_iter run/);
  });

  it("a run killed before it wrote config.json (its replay and initial checkpoint made) is started again, also on resume", () => {
    // fault-injection found it: the resume refused "a run whose config.json is missing".
    const d = tmp();
    writeRunMarker(d, RUN_OUTPUTS);
    mkdirSync(path.join(d, "preference_replay"));
    mkdirSync(path.join(d, "checkpoints", "initial"), { recursive: true });
    expect(basenames(planRunDir(opts(d, { resumeLatest: true })).replace)).toEqual(["checkpoints", "preference_replay"]);
    expect(planRunDir(opts(d)).resume).toBe(false);
    // Not when those entries are not on pbrl's list.
    const e = tmp();
    mkdirSync(path.join(e, "checkpoints", "initial"), { recursive: true });
    expect(() => planRunDir(opts(e, { resumeLatest: true }))).toThrow(RunDirError);
  });

  it("an output_dir that is a file, and resume of an empty folder, are errors", () => {
    const d = tmp();
    const f = path.join(d, "file");
    writeFileSync(f, "x");
    expect(() => planRunDir(opts(f))).toThrow(/is a file, not a folder/);
    expect(() => planRunDir(opts(d, { resumeLatest: true }))).toThrow(/holds no run to resume/);
    expect(planRunDir(opts(path.join(d, "new")))).toEqual({ resume: false, replace: [] });
  });

  it("files under a run's names that no marker lists are never replaced, with or without overwrite; the refusal names them and suggests no overwrite", () => {
    const d = tmp();
    writeFileSync(path.join(d, "config.json"), '{"model_type": "llama"}');
    mkdirSync(path.join(d, "agents"));
    for (const overwrite of [false, true]) {
      let message = "";
      try {
        planRunDir(opts(d, { overwrite }));
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(
        /output_dir .* holds config\.json, agents under the names a run writes, and pbrl did not write them \(it has no \.pbrl-run\.json/,
      );
      expect(message).toMatch(/never writes over or deletes files it did not write.*Choose another output_dir, or move them away/);
      expect(message).not.toMatch(/set overwrite_output_dir/);
    }
    // a marker that lists config.json but not agents: agents is still not pbrl's
    writeRunMarker(d, ["config.json"]);
    expect(() => planRunDir(opts(d, { overwrite: true }))).toThrow(/holds agents under the names a run writes.*does not list them/);
  });

  it("a finished run of a pbrl without the marker is resumed, but overwrite refuses it (before and after) and says how to start over", () => {
    const d = tmp();
    finishedRun(d, false);
    const refusal =
      /holds config\.json, metrics\.jsonl, agents, checkpoints under the names a run writes.*resume it with resume_from_checkpoint=true, or delete them yourself/;
    expect(() => planRunDir(opts(d, { overwrite: true }))).toThrow(refusal);
    expect(planRunDir(opts(d, { resumeLatest: true }))).toEqual({ resume: true, replace: [] });
    const o = opts(d, { resumeLatest: true });
    openRunDir(o, planRunDir(o))();
    // nothing listed: which entries are that run's is unknown, so none may be deleted
    expect(readRunMarker(d)).toBeUndefined();
    expect(() => planRunDir(opts(d, { overwrite: true }))).toThrow(refusal);
    expect(planRunDir(opts(d, { resumeLatest: true }))).toEqual({ resume: true, replace: [] });
    expect(readFileSync(path.join(d, "notes.txt"), "utf8")).toBe("mine");
  });

  it("a base-trainer run whose agents were moved away still holds results (its preference pairs): it is not started again", () => {
    const d = tmp();
    writeFileSync(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo" }));
    writeFileSync(path.join(d, "metrics.jsonl"), "{}\n");
    writeFileSync(path.join(d, "preference_pairs.json"), "[]");
    writeRunMarker(d, RUN_OUTPUTS);
    const base = { outputDir: d, resumeLatest: false, overwrite: false, trainer: "madpo" };
    expect(() => planRunDir(base)).toThrow(/already holds a run's results \(config\.json, metrics\.jsonl, preference_pairs\.json\)/);
  });

  it("preference_replay_dir or policy_checkpoint_dir holding anyone else's files is refused, with or without overwrite", () => {
    const d = tmp();
    const project = tmp();
    writeFileSync(path.join(project, "package.json"), "{}");
    mkdirSync(path.join(project, "src"));
    for (const field of ["preferenceReplayDir", "policyCheckpointDir"] as const)
      for (const overwrite of [false, true]) {
        const o = opts(path.join(d, "out"), { [field]: project, overwrite });
        let message = "";
        try {
          planRunDir(o);
        } catch (err) {
          message = (err as Error).message;
        }
        expect(message).toMatch(
          /(preference_replay_dir|policy_checkpoint_dir) .* holds package\.json, src, which pbrl did not write there.*Choose a new or empty folder/,
        );
        expect(message).not.toMatch(/set overwrite_output_dir/);
      }
    expect(readdirSync(project).sort()).toEqual(["package.json", "src"]);
  });

  it("output_dir or an extra folder that is, lies inside, or holds an input where the run writes is refused before anything is written", () => {
    const root = tmp();
    const model = path.join(root, "model");
    mkdirSync(model);
    writeFileSync(path.join(model, "config.json"), '{"model_type": "llama"}');
    const data = path.join(root, "data.jsonl");
    writeFileSync(data, "{}\n");
    symlinkSync(model, path.join(root, "link"));
    const inputs = [
      { what: "agent_model", path: model },
      { what: "train_dataset", path: data },
    ];
    const refuse = (o: Partial<RunDirOptions>, re: RegExp) =>
      expect(() => planRunDir(opts(path.join(root, "out"), { inputs, overwrite: true, ...o }))).toThrow(re);
    refuse({ outputDir: model }, /output_dir .*model is the agent_model .*model, which the run reads/);
    refuse({ outputDir: path.join(root, "link") }, /output_dir .*link is the agent_model/);
    refuse({ outputDir: path.join(model, "run") }, /output_dir .*run lies inside the agent_model/);
    refuse({ preferenceReplayDir: model }, /preference_replay_dir .*model is the agent_model/);
    refuse({ policyCheckpointDir: path.join(root, "link", "ckpt") }, /policy_checkpoint_dir .* lies inside the agent_model/);
    refuse(
      { preferenceReplayDir: root },
      /preference_replay_dir .* holds the agent_model .*model, which the run reads; pbrl writes preference_replay_dir only into a folder of its own/,
    );
    // an input inside output_dir where the run writes (an earlier run's agents as the new run's model)
    const prev = path.join(root, "prev");
    mkdirSync(path.join(prev, "agents", "agent_0"), { recursive: true });
    writeRunMarker(prev, RUN_OUTPUTS);
    expect(() => planRunDir(opts(prev, { inputs: [{ what: "agent_model", path: path.join(prev, "agents", "agent_0") }], overwrite: true }))).toThrow(
      /agent_model .*agent_0 lies inside .*prev.agents, which this run writes \(and overwrite_output_dir replaces\)/,
    );
    // output_dir may hold the user's own files, inputs included, beside the run's names
    expect(planRunDir(opts(root, { inputs: [{ what: "train_dataset", path: data }] }))).toEqual({ resume: false, replace: [] });
    // a checkpoint folder inside an entry output_dir writes as a whole
    expect(() => planRunDir(opts(path.join(root, "out"), { policyCheckpointDir: path.join(root, "out", "agents", "ck") }))).toThrow(
      /policy_checkpoint_dir .* lies inside .*out.agents, which the run writes as output_dir's agents/,
    );
  });
});

describe("openRunDir", () => {
  it("replaces only the earlier run's outputs, removes killed runs' temporaries, and leaves the user's files", () => {
    const d = tmp();
    finishedRun(d);
    const stale = path.join(d, "checkpoints", `.round_0005.tmp-${deadPid()}-0123abcd`);
    mkdirSync(stale);
    // a user's file that merely looks like a temporary, in a folder of the user's, is not pbrl's
    mkdirSync(path.join(d, "mine"));
    writeFileSync(path.join(d, "mine", `.x.tmp-${deadPid()}-0123abcd`), "mine");
    const o = opts(d, { overwrite: true });
    const release = openRunDir(o, planRunDir(o));
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER, "mine", "notes.txt", "run.lock"]);
    expect(readFileSync(path.join(d, "notes.txt"), "utf8")).toBe("mine");
    expect(readdirSync(path.join(d, "mine"))).toHaveLength(1);
    // listed before anything is written: every name the run may write
    expect([...(readRunMarker(d) as Set<string>)].sort()).toEqual([...RUN_OUTPUTS].sort());
    writeFileSync(path.join(d, "config.json"), "{}");
    release();
    expect(existsSync(path.join(d, "run.lock"))).toBe(false);
    // trimmed to what the run wrote (and report.html, which `pbrl report` writes later)
    expect([...(readRunMarker(d) as Set<string>)].sort()).toEqual(["config.json", "report.html"]);
  });

  it("on resume, keeps everything but the temporaries of killed writes", () => {
    const d = tmp();
    finishedRun(d);
    const dead = deadPid();
    writeFileSync(path.join(d, `.metrics.jsonl.tmp-${dead}-0123abcd`), "half");
    mkdirSync(path.join(d, "checkpoints", `.round_0003.old-${dead}-89abcdef`));
    const o = opts(d, { resumeLatest: true });
    const release = openRunDir(o, planRunDir(o));
    release();
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER, "agents", "checkpoints", "config.json", "metrics.jsonl", "notes.txt"]);
    expect(readdirSync(path.join(d, "checkpoints")).sort()).toEqual(["latest.json", "round_0004"]);
  });

  it("a replay folder pbrl writes outside output_dir gets its own marker, and overwrite replaces only the round files listed there", () => {
    const root = tmp();
    const out = path.join(root, "out");
    const replay = path.join(root, "replay");
    const o = opts(out, { preferenceReplayDir: replay, rounds: 2 });
    openRunDir(o, planRunDir(o))();
    expect([...(readRunMarker(replay) as Set<string>)]).toEqual([]);
    const again = openRunDir(o, planRunDir({ ...o, overwrite: true }));
    writeFileSync(path.join(replay, "iteration_0001.json"), "{}");
    again();
    expect([...(readRunMarker(replay) as Set<string>)]).toEqual(["iteration_0001.json"]);
    writeFileSync(path.join(replay, "later.txt"), "mine");
    expect(() => planRunDir({ ...o, overwrite: true })).toThrow(/preference_replay_dir .*replay holds later\.txt, which pbrl did not write there/);
    expect(readdirSync(replay).sort()).toEqual([RUN_MARKER, "iteration_0001.json", "later.txt"]);
  });
});
