// Every refusal and note of the run folders, word for word, on real folders: each names the
// setting, the folder and what pbrl found there, and the way out (the folder or flag to use).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openRunDir, planRunDir, RUN_OUTPUTS, RunDirError } from "../src/run-dir.js";
import { readRunMarker, RUN_MARKER, writeRunMarker } from "../src/run-marker.js";
import { planRefusal, runDirOptions } from "./run-dir-fixtures.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-rundir-msg-"));
const opts = runDirOptions;

const refusal = planRefusal;

const write = (file: string, text = "x") => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

const NEVER = "pbrl never writes over or deletes files it did not write, with or without overwrite_output_dir.";

describe("refusals of files pbrl did not write under a run's names", () => {
  it("no marker: the files named, and delete-them-yourself advice for an older pbrl's run", () => {
    const d = tmp();
    write(path.join(d, "config.json"), "{}");
    write(path.join(d, "metrics.jsonl"));
    expect(refusal(opts(d))).toBe(
      `output_dir ${d} holds config.json, metrics.jsonl under the names a run writes, and pbrl did not write them (it has no ${RUN_MARKER}, where pbrl lists what it wrote there): they may be yours. ${NEVER} Choose another output_dir, or move them away. If they are an older pbrl version's run, delete them yourself to start over.`,
    );
  });

  it("no marker but a checkpoint: resume_from_checkpoint=true is the way to continue it", () => {
    const d = tmp();
    write(path.join(d, "checkpoints", "latest.json"), "{}");
    expect(refusal(opts(d, { overwrite: true }))).toBe(
      `output_dir ${d} holds checkpoints under the names a run writes, and pbrl did not write them (it has no ${RUN_MARKER}, where pbrl lists what it wrote there): they may be yours. ${NEVER} Choose another output_dir, or move them away. If they are a run of a pbrl version older than that list, resume it with resume_from_checkpoint=true, or delete them yourself to start over.`,
    );
  });

  it("a damaged marker, and one that does not list them: no older-pbrl advice", () => {
    const d = tmp();
    write(path.join(d, "agents", "agent_0", "w"));
    write(path.join(d, RUN_MARKER), "{");
    expect(refusal(opts(d))).toBe(
      `output_dir ${d} holds agents under the names a run writes, and pbrl did not write them (its ${RUN_MARKER}, where pbrl lists what it wrote there, is damaged): they may be yours. ${NEVER} Choose another output_dir, or move them away.`,
    );
    writeRunMarker(d, ["metrics.jsonl"]);
    expect(refusal(opts(d))).toBe(
      `output_dir ${d} holds agents under the names a run writes, and pbrl did not write them (its ${RUN_MARKER}, where pbrl lists what it wrote there, does not list them): they may be yours. ${NEVER} Choose another output_dir, or move them away.`,
    );
  });

  it("resume_from_checkpoint=true without a checkpoint says so first; more than six files are counted", () => {
    const d = tmp();
    for (const n of ["config.json", "metrics.jsonl", "preference_pairs.json", "agents", "preference_replay", "reward_model", "tensorboard", "report.html"])
      write(path.join(d, n));
    expect(refusal(opts(d, { resumeLatest: true }))).toBe(
      `resume_from_checkpoint=true: ${path.join(d, "checkpoints")} holds no checkpoint, and output_dir ${d} holds config.json, metrics.jsonl, preference_pairs.json, agents, preference_replay, reward_model, … (8 in all) under the names a run writes, and pbrl did not write them (it has no ${RUN_MARKER}, where pbrl lists what it wrote there): they may be yours. ${NEVER} Choose another output_dir, or move them away. If they are an older pbrl version's run, delete them yourself to start over.`,
    );
    // without checkpointsDir, output_dir is named
    expect(refusal(opts(d, { resumeLatest: true, checkpointsDir: undefined }))).toMatch(
      new RegExp(`^resume_from_checkpoint=true: ${d} holds no checkpoint, and output_dir`),
    );
  });

  it("a file named as a run's own in a marked folder is sorted the way a run writes them, then by name", () => {
    const d = tmp();
    writeRunMarker(d, []);
    for (const n of ["tensorboard", "agents", "config.json", "zeta.txt", "alpha.txt"]) write(path.join(d, n));
    // zeta.txt and alpha.txt are the user's: output_dir may hold them
    expect(refusal(opts(d))).toContain(`output_dir ${d} holds config.json, agents, tensorboard under the names a run writes`);
  });
});

describe("refusals of folders and inputs", () => {
  it("an output_dir or a checkpoint folder that is a file", () => {
    const d = tmp();
    const f = path.join(d, "file");
    write(f);
    expect(refusal(opts(f))).toBe(`output_dir ${f} is a file, not a folder; choose a folder path for the run's outputs`);
    expect(refusal(opts(path.join(d, "out"), { policyCheckpointDir: f }))).toBe(
      `policy_checkpoint_dir ${f} is a file, not a folder; choose a folder path for the run's outputs`,
    );
  });

  it("a run folder that is, lies inside or holds an input", () => {
    const root = tmp();
    const model = path.join(root, "model");
    write(path.join(model, "config.json"), "{}");
    const inputs = [{ what: "agent_model", path: model }];
    const out = path.join(root, "out");
    expect(refusal(opts(model, { inputs }))).toBe(
      `output_dir ${model} is the agent_model ${model}, which the run reads; pbrl never writes its run files into an input. Choose a new folder for output_dir`,
    );
    expect(refusal(opts(path.join(model, "run"), { inputs }))).toBe(
      `output_dir ${path.join(model, "run")} lies inside the agent_model ${model}, which the run reads; pbrl never writes into an input. Choose another output_dir, outside it`,
    );
    expect(refusal(opts(out, { inputs, preferenceReplayDir: root }))).toBe(
      `preference_replay_dir ${root} holds the agent_model ${model}, which the run reads; pbrl writes preference_replay_dir only into a folder of its own. Choose a new or empty folder for preference_replay_dir`,
    );
    // both extra settings naming one folder are named together
    expect(refusal(opts(out, { inputs, preferenceReplayDir: model, policyCheckpointDir: model }))).toBe(
      `policy_checkpoint_dir and preference_replay_dir ${model} is the agent_model ${model}, which the run reads; pbrl never writes its run files into an input. Choose a new folder for policy_checkpoint_dir and preference_replay_dir`,
    );
    // a model inside output_dir where the run writes
    const prev = path.join(root, "prev");
    const agent = path.join(prev, "agents", "agent_0");
    write(path.join(agent, "config.json"), "{}");
    writeRunMarker(prev, RUN_OUTPUTS);
    expect(refusal(opts(prev, { inputs: [{ what: "agent_model", path: agent }], overwrite: true }))).toBe(
      `the agent_model ${agent} lies inside ${path.join(prev, "agents")}, which this run writes (and overwrite_output_dir replaces); pbrl never writes over an input. Move it out of output_dir ${prev}, or choose another output_dir`,
    );
    // a marker-listed name counts as written too, not only the run's own names
    const listed = path.join(root, "listed");
    write(path.join(listed, "old_stuff", "data.jsonl"));
    writeRunMarker(listed, ["old_stuff"]);
    expect(refusal(opts(listed, { inputs: [{ what: "train_dataset", path: path.join(listed, "old_stuff", "data.jsonl") }] }))).toBe(
      `the train_dataset ${path.join(listed, "old_stuff", "data.jsonl")} lies inside ${path.join(listed, "old_stuff")}, which this run writes (and overwrite_output_dir replaces); pbrl never writes over an input. Move it out of output_dir ${listed}, or choose another output_dir`,
    );
    // an input that does not exist (a hub id) is no folder
    expect(planRunDir(opts(out, { inputs: [{ what: "agent_model", path: "org/model" }] }))).toEqual({ resume: false, replace: [] });
  });

  it("a run folder inside another's entry", () => {
    const root = tmp();
    const out = path.join(root, "out");
    const ck = path.join(out, "agents", "ck");
    expect(refusal(opts(out, { policyCheckpointDir: ck }))).toBe(
      `policy_checkpoint_dir ${ck} lies inside ${path.join(out, "agents")}, which the run writes as output_dir's agents (and overwrite_output_dir replaces as a whole); choose a folder outside it`,
    );
    // inside output_dir, but beside the run's names: allowed
    expect(planRunDir(opts(out, { policyCheckpointDir: path.join(out, "my_ckpts") }))).toEqual({ resume: false, replace: [] });
    // output_dir inside the checkpoint folder's round folder
    const ck2 = path.join(root, "ck2");
    expect(refusal(opts(path.join(ck2, "round_0001", "out"), { policyCheckpointDir: ck2 }))).toBe(
      `output_dir ${path.join(ck2, "round_0001", "out")} lies inside ${path.join(ck2, "round_0001")}, which the run writes as policy_checkpoint_dir's round_0001 (and overwrite_output_dir replaces as a whole); choose a folder outside it`,
    );
  });

  it("an extra folder holding anyone else's files, for a fresh run", () => {
    const root = tmp();
    const replay = path.join(root, "replay");
    write(path.join(replay, "notes.txt"));
    expect(refusal(opts(path.join(root, "out"), { preferenceReplayDir: replay }))).toBe(
      `preference_replay_dir ${replay} holds notes.txt, which pbrl did not write there; a fresh run writes there only into a new or empty folder, or one holding nothing but an earlier pbrl run's files, and never deletes anyone else's. Choose a new or empty folder for preference_replay_dir, or leave it unset (the run then writes under output_dir)`,
    );
    // the default place is output_dir's own: no extra folder at all
    expect(planRunDir(opts(path.join(root, "out"), { preferenceReplayDir: path.join(root, "out", "preference_replay") }))).toEqual({
      resume: false,
      replace: [],
    });
  });
});

describe("refusals of a folder holding a pbrl run", () => {
  /** A marked run: config.json of `trainer` (or none), and the given entries. */
  function run(d: string, trainer: string | undefined, entries: string[]) {
    if (trainer !== undefined) write(path.join(d, "config.json"), JSON.stringify({ trainer }));
    for (const e of entries) write(path.join(d, e));
    writeRunMarker(d, RUN_OUTPUTS);
  }

  it("resume_from_checkpoint=true in an empty folder", () => {
    const d = tmp();
    expect(refusal(opts(d, { resumeLatest: true }))).toBe(
      `resume_from_checkpoint=true: ${d} holds no run to resume; check output_dir, or start without resume_from_checkpoint`,
    );
  });

  it("resume_from_checkpoint=true of a finished run without checkpoint, another trainer's, or one with a damaged config", () => {
    const advice = `choose another output_dir, or start without resume_from_checkpoint and with overwrite_output_dir=true to replace those files of pbrl's (nothing else is touched)`;
    const a = tmp();
    run(a, "madpo_iter", ["agents/agent_0/w", "metrics.jsonl"]);
    expect(refusal(opts(a, { resumeLatest: true }))).toBe(
      `resume_from_checkpoint=true: ${a} has no checkpoint to resume (${path.join(a, "checkpoints", "latest.json")} is missing) and holds a finished run (config.json, metrics.jsonl, agents); ${advice}`,
    );
    const b = tmp();
    run(b, "marlhf_iter", []);
    expect(refusal(opts(b, { resumeLatest: true, checkpointsDir: undefined }))).toBe(
      `resume_from_checkpoint=true: ${b} has no checkpoint to resume (${path.join(b, "latest.json")} is missing) and holds a marlhf_iter run, not a madpo_iter run (config.json); ${advice}`,
    );
    const c = tmp();
    run(c, undefined, ["agents/agent_0/w"]);
    write(path.join(c, "config.json"), "{");
    expect(refusal(opts(c, { resumeLatest: true }))).toBe(
      `resume_from_checkpoint=true: ${c} has no checkpoint to resume (${path.join(c, "checkpoints", "latest.json")} is missing) and holds files of a run whose config.json is missing or damaged (config.json, agents); ${advice}`,
    );
    // a config.json whose trainer is not a string is as good as damaged
    write(path.join(c, "config.json"), '{"trainer": 3}');
    expect(refusal(opts(c, { resumeLatest: true }))).toContain("holds files of a run whose config.json is missing or damaged");
  });

  it("a fresh run over results: the folders holding them, and the three ways out", () => {
    const d = tmp();
    run(d, "madpo_iter", ["agents/agent_0/w"]);
    const ways = `pbrl does not write a new run over them. Resume that run with resume_from_checkpoint=true, choose another output_dir, or set overwrite_output_dir=true to replace those files, which pbrl wrote (nothing else is touched)`;
    expect(refusal(opts(d))).toBe(`output_dir ${d} already holds a run's results (config.json, agents); ${ways}`);
    // with a replay folder elsewhere holding the run's round file, both are named
    const root = tmp();
    const out = path.join(root, "out");
    const replay = path.join(root, "replay");
    run(out, "madpo_iter", ["agents/agent_0/w"]);
    write(path.join(replay, "iteration_0001.json"), "{}");
    writeRunMarker(replay, ["iteration_0001.json"]);
    expect(refusal(opts(out, { preferenceReplayDir: replay }))).toBe(
      `output_dir ${out} and preference_replay_dir ${replay} already hold a run's results (config.json, agents, ${path.join(replay, "iteration_0001.json")}); ${ways}`,
    );
    // the same trainer's run with no results, but a checkpoint: also not started again
    const e = tmp();
    run(e, "madpo_iter", ["checkpoints/latest.json"]);
    expect(refusal(opts(e))).toBe(`output_dir ${e} already holds a run's results (config.json, checkpoints); ${ways}`);
    // preference_pairs.json and reward_model are results too
    for (const result of ["preference_pairs.json", "reward_model"]) {
      const f = tmp();
      run(f, "madpo_iter", [result]);
      expect(refusal(opts(f))).toBe(`output_dir ${f} already holds a run's results (config.json, ${result}); ${ways}`);
    }
  });

  it("a run that completed no round is started again, with a note naming its files (and keeping people's picks)", () => {
    const d = tmp();
    run(d, "madpo_iter", ["metrics.jsonl", "human_labels/round_0001.json"]);
    const lines: string[] = [];
    const plan = planRunDir(opts(d, { log: (l) => lines.push(l) }));
    expect(plan).toEqual({ resume: false, replace: [path.join(d, "config.json"), path.join(d, "metrics.jsonl")] });
    expect(lines).toEqual([
      `pbrl: ${d} holds a madpo_iter run that completed no round (config.json, metrics.jsonl, human_labels); starting it again from the beginning (keeping human_labels: the picks saved there are not asked again)`,
    ]);
    const e = tmp();
    run(e, "madpo_iter", ["metrics.jsonl"]);
    lines.length = 0;
    planRunDir(opts(e, { log: (l) => lines.push(l) }));
    expect(lines).toEqual([`pbrl: ${e} holds a madpo_iter run that completed no round (config.json, metrics.jsonl); starting it again from the beginning`]);
  });
});

describe("openRunDir", () => {
  it("overwrite: removes what the marker lists, sets people's picks aside under a dated name, says both, and lists the new name", () => {
    const d = tmp();
    write(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    write(path.join(d, "agents", "agent_0", "w"));
    write(path.join(d, "human_labels", "round_0001.json"), "picks");
    write(path.join(d, "notes.txt"), "mine");
    writeRunMarker(d, RUN_OUTPUTS);
    const lines: string[] = [];
    const o = opts(d, { overwrite: true, log: (l) => lines.push(l) });
    const plan = planRunDir(o);
    expect(plan).toEqual({
      resume: false,
      replace: [path.join(d, "config.json"), path.join(d, "agents")],
      setAside: [path.join(d, "human_labels")],
    });
    const before = new Date().toISOString().slice(0, 10);
    const release = openRunDir(o, plan);
    const kept = readdirSync(d).filter((n) => n.startsWith("human_labels.before-"));
    expect(kept).toHaveLength(1);
    // the time with ":" and "." made "-": a name every file system takes
    expect(kept[0]).toMatch(new RegExp(`^human_labels\\.before-${before}T\\d\\d-\\d\\d-\\d\\d-\\d{3}Z$`));
    expect(readFileSync(path.join(d, kept[0]!, "round_0001.json"), "utf8")).toBe("picks");
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER, kept[0], "notes.txt", "run.lock"]);
    expect(lines).toEqual([`pbrl: replaced the earlier run's config.json, agents in ${d}`, `pbrl: kept the earlier run's picks as ${path.join(d, kept[0]!)}`]);
    expect([...(readRunMarker(d) as Set<string>)].sort()).toEqual([...RUN_OUTPUTS, kept[0]!].sort());
    release();
    // the picks set aside stay listed, and are never replaced, even by the next overwrite
    expect([...(readRunMarker(d) as Set<string>)]).toContain(kept[0]);
    expect(planRunDir(opts(d, { overwrite: true }))).toEqual({ resume: false, replace: [], setAside: [] });
    expect(existsSync(path.join(d, kept[0]!, "round_0001.json"))).toBe(true);
  });

  it("a folder that received another run's files between planning and opening is refused, and the lock is given back", () => {
    const d = tmp();
    const o = opts(d);
    const plan = planRunDir(o);
    write(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    writeRunMarker(d, RUN_OUTPUTS);
    expect(() => openRunDir(o, plan)).toThrow(
      new RunDirError(`output_dir ${d} received another run's files while this run was starting; choose another output_dir`),
    );
    expect(() => openRunDir(o, plan)).toThrow(RunDirError);
    expect(existsSync(path.join(d, "run.lock"))).toBe(false);
    // planned as a resume, opened as a fresh start: refused too
    const e = tmp();
    expect(() => openRunDir(opts(e), { resume: true, replace: [] })).toThrow(/received another run's files while this run was starting/);
  });

  it("a replaced entry outside output_dir is named by its path from output_dir", () => {
    const root = tmp();
    const out = path.join(root, "out");
    const ck = path.join(root, "ck");
    write(path.join(ck, "round_0001", "state.json"), "{}");
    writeRunMarker(ck, ["round_0001"]);
    const lines: string[] = [];
    const o = opts(out, { policyCheckpointDir: ck, checkpointsDir: ck, overwrite: true, log: (l) => lines.push(l) });
    openRunDir(o, planRunDir(o))();
    expect(lines).toEqual([`pbrl: replaced the earlier run's ${path.relative(out, path.join(ck, "round_0001"))} in ${out}`]);
    expect(readdirSync(ck)).toEqual([RUN_MARKER]);
  });
});

describe("what counts as pbrl's, the user's, or a temporary", () => {
  it("exactly six names are listed whole; the seventh adds the count", () => {
    const d = tmp();
    const six = ["config.json", "metrics.jsonl", "preference_pairs.json", "agents", "checkpoints", "preference_replay"];
    for (const n of six) write(path.join(d, n));
    expect(refusal(opts(d, { checkpointsDir: undefined }))).toContain(`output_dir ${d} holds ${six.join(", ")} under the names a run writes`);
  });

  it("the user's files in an extra folder are named in name order; pbrl's temporaries of its own names are not the user's", () => {
    const root = tmp();
    const ck = path.join(root, "ck");
    const dead = 999_999_999;
    for (const n of ["d.txt", "b.txt", "c.txt", "a.txt"]) write(path.join(ck, n));
    const fresh = opts(path.join(root, "out"), { policyCheckpointDir: ck });
    expect(refusal(fresh)).toMatch(new RegExp(`^policy_checkpoint_dir ${ck} holds a\\.txt, b\\.txt, c\\.txt, d\\.txt, which pbrl did not write there`));
    const only = path.join(root, "only");
    // temporaries of the marker, of a name the folder's run writes, and of a name its marker lists
    write(path.join(only, `.${RUN_MARKER}.tmp-${dead}-0123abcd`));
    write(path.join(only, `.round_0001.tmp-${dead}-89abcdef`));
    write(path.join(only, `.latest.json.old-${dead}-00000000`));
    write(path.join(only, `.old_round.tmp-${dead}-0123abcd`));
    writeRunMarker(only, ["old_round"]);
    expect(planRunDir(opts(path.join(root, "out2"), { policyCheckpointDir: only }))).toEqual({ resume: false, replace: [] });
    // a temporary's name of anything else is the user's file, and so is a name that only looks like one
    for (const n of [
      `.notes.tmp-${dead}-0123abcd`,
      `x.round_0001.tmp-${dead}-0123abcd`,
      `.round_0001.tmp-${dead}-0123abcdx`,
      `.round_0001.tmp-${dead}-0123abcg`,
    ]) {
      const f = path.join(root, `user-${n}`);
      write(path.join(f, n));
      expect(refusal(opts(path.join(root, "out3"), { policyCheckpointDir: f }))).toContain(`${f} holds ${n}, which pbrl did not write there`);
    }
  });

  it("openRunDir removes a dead writer's temporaries only under pbrl's names, never a user's file that resembles one", () => {
    const d = tmp();
    const dead = 999_999_999;
    const user = [`notes.agents.tmp-${dead}-0123abcd`, `.agents.tmp-${dead}-0123abcd.keep`, `.notes.tmp-${dead}-0123abcd`];
    for (const n of user) write(path.join(d, n), "mine");
    write(path.join(d, `.agents.tmp-${dead}-0123abcd`), "half");
    write(path.join(d, `.config.json.old-${dead}-0123abcd`), "half");
    // this process's own temporaries are its writes in progress: kept
    write(path.join(d, `.metrics.jsonl.tmp-${process.pid}-0123abcd`), "mine now");
    // a folder of the user's is never looked into, whatever its files are called
    write(path.join(d, "mine", `.agents.tmp-${dead}-0123abcd`), "mine");
    const o = opts(d);
    openRunDir(o, planRunDir(o))();
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER, ...user, `.metrics.jsonl.tmp-${process.pid}-0123abcd`, "mine"].sort());
    expect(readdirSync(path.join(d, "mine"))).toEqual([`.agents.tmp-${dead}-0123abcd`]);
  });

  it("openRunDir looks into a folder of pbrl's own, but not into this process's temporary folder there (a write in progress)", () => {
    const d = tmp();
    const dead = 999_999_999;
    // human_labels survives a restarted run, so its folder is looked into rather than replaced
    const labels = path.join(d, "human_labels");
    write(path.join(labels, `.picks.json.tmp-${dead}-0123abcd`), "half");
    const mine = path.join(labels, `.round_0001.tmp-${process.pid}-89abcdef`);
    write(path.join(mine, `.picks.json.tmp-${dead}-0123abcd`), "being written");
    writeRunMarker(d, ["human_labels"]);
    const o = opts(d);
    openRunDir(o, planRunDir(o))();
    expect(readdirSync(labels)).toEqual([path.basename(mine)]);
    expect(readdirSync(mine)).toEqual([`.picks.json.tmp-${dead}-0123abcd`]);
  });

  it("both extra settings on one folder: it is checked with the names of both", () => {
    const root = tmp();
    const both = path.join(root, "both");
    write(path.join(both, "iteration_0001.json"), "{}");
    write(path.join(both, "initial", "x"));
    expect(refusal(opts(path.join(root, "out"), { policyCheckpointDir: both, preferenceReplayDir: both }))).toBe(
      `policy_checkpoint_dir and preference_replay_dir ${both} holds initial, iteration_0001.json under the names a run writes, and pbrl did not write them (it has no ${RUN_MARKER}, where pbrl lists what it wrote there): they may be yours. ${NEVER} Choose another policy_checkpoint_dir and preference_replay_dir, or move them away. If they are an older pbrl version's run, delete them yourself to start over.`,
    );
  });

  it("an extra folder holding the other extra folder, and a checkpoint folder at output_dir's own place, are no one else's files", () => {
    const root = tmp();
    const out = path.join(root, "out");
    const ck = path.join(root, "ck");
    mkdirSync(path.join(ck, "replay"), { recursive: true });
    expect(planRunDir(opts(out, { policyCheckpointDir: ck, preferenceReplayDir: path.join(ck, "replay") }))).toEqual({ resume: false, replace: [] });
    expect(planRunDir(opts(out, { policyCheckpointDir: path.join(out, "checkpoints"), preferenceReplayDir: null }))).toEqual({ resume: false, replace: [] });
    // a missing input path (a hub id) is not a folder, even when it names output_dir
    expect(planRunDir(opts(out, { inputs: [{ what: "agent_model", path: out }] }))).toEqual({ resume: false, replace: [] });
  });

  it("run.lock and a marker-listed name of people's picks: the lock is never replaced, any listed name is", () => {
    const d = tmp();
    write(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    write(path.join(d, "run.lock"), "{}");
    write(path.join(d, "my_human_labels"), "listed by hand");
    writeRunMarker(d, [...RUN_OUTPUTS, "run.lock", "my_human_labels"]);
    expect(planRunDir(opts(d))).toEqual({ resume: false, replace: [path.join(d, "config.json"), path.join(d, "my_human_labels")] });
  });
});
