// The run folders on a resume from a named checkpoint, and what openRunDir writes and says, on
// real folders: which checkpoint shows that unmarked files are a run's, what the markers list
// before the run writes, and which folders a refusal names.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openRunDir, planRunDir, RUN_OUTPUTS } from "../src/run-dir.js";
import { readRunMarker, RUN_MARKER, writeRunMarker } from "../src/run-marker.js";
import { planRefusal, runDirOptions } from "./run-dir-fixtures.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-rundir-resume-"));
const opts = runDirOptions;

const refusal = planRefusal;

const write = (file: string, text = "x") => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

/** A run with a checkpoint of round 2: config.json, agents and checkpoints/round_0002; marked or (an older pbrl's) not. */
function checkpointedRun(d: string, marked: boolean): string {
  write(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
  write(path.join(d, "agents", "agent_0", "w"));
  write(path.join(d, "checkpoints", "round_0002", "state.json"), "{}");
  write(path.join(d, "checkpoints", "latest.json"), JSON.stringify({ round: 2, dir: "round_0002" }));
  if (marked) writeRunMarker(d, RUN_OUTPUTS);
  return path.join(d, "checkpoints", "round_0002");
}

const NEVER = "pbrl never writes over or deletes files it did not write, with or without overwrite_output_dir.";

describe("resume_from_checkpoint given as a path", () => {
  it("resumes a marked run from a round folder named by path, without resume_from_checkpoint=true", () => {
    const d = tmp();
    const round = checkpointedRun(d, true);
    expect(planRunDir(opts(d, { resumeCheckpoint: round }))).toEqual({ resume: true, replace: [] });
    // the same folder without it is a fresh run over results
    expect(refusal(opts(d))).toContain("already holds a run's results");
  });

  it("an older pbrl's unmarked run is adopted only when the named checkpoint lies in its own checkpoints folder", () => {
    const d = tmp();
    const round = checkpointedRun(d, false);
    expect(planRunDir(opts(d, { resumeCheckpoint: round }))).toEqual({ resume: true, replace: [] });
    expect(planRunDir(opts(d, { resumeCheckpoint: path.join(d, "checkpoints") }))).toEqual({ resume: true, replace: [] });
    const unmarked = `output_dir ${d} holds config.json, agents, checkpoints under the names a run writes, and pbrl did not write them (it has no ${RUN_MARKER}, where pbrl lists what it wrote there): they may be yours. ${NEVER} Choose another output_dir, or move them away.`;
    // another run's checkpoint says nothing about whose these files are
    const other = checkpointedRun(tmp(), true);
    expect(refusal(opts(d, { resumeCheckpoint: other }))).toBe(
      `${unmarked} If they are a run of a pbrl version older than that list, resume it with resume_from_checkpoint=true, or delete them yourself to start over.`,
    );
    // nor does any checkpoint when the run has no checkpoints folder to compare with
    expect(refusal(opts(d, { resumeCheckpoint: round, checkpointsDir: undefined }))).toBe(
      `${unmarked} If they are an older pbrl version's run, delete them yourself to start over.`,
    );
  });

  it("a marker that does not list the files is not adopted, even on a resume with a checkpoint", () => {
    const d = tmp();
    checkpointedRun(d, false);
    writeRunMarker(d, ["config.json", "checkpoints"]);
    for (const more of [{ resumeLatest: true }, { resumeCheckpoint: path.join(d, "checkpoints") }])
      expect(refusal(opts(d, more))).toBe(
        `output_dir ${d} holds agents under the names a run writes, and pbrl did not write them (its ${RUN_MARKER}, where pbrl lists what it wrote there, does not list them): they may be yours. ${NEVER} Choose another output_dir, or move them away.`,
      );
  });
});

describe("planRunDir, the rest", () => {
  it("a listed config.json that is damaged, in a run with no round done, is not started again in place", () => {
    const d = tmp();
    write(path.join(d, "config.json"), "{");
    write(path.join(d, "metrics.jsonl"), "");
    writeRunMarker(d, RUN_OUTPUTS);
    const lines: string[] = [];
    expect(refusal(opts(d, { log: (l) => lines.push(l) }))).toBe(
      `output_dir ${d} already holds a run's results (config.json, metrics.jsonl); pbrl does not write a new run over them. Resume that run with resume_from_checkpoint=true, choose another output_dir, or set overwrite_output_dir=true to replace those files, which pbrl wrote (nothing else is touched)`,
    );
    expect(lines).toEqual([]);
  });

  it("a refusal over results names only the folders holding them, not an empty extra folder", () => {
    const root = tmp();
    const out = path.join(root, "out");
    write(path.join(out, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    write(path.join(out, "agents", "agent_0", "w"));
    writeRunMarker(out, RUN_OUTPUTS);
    const replay = path.join(root, "replay");
    mkdirSync(replay);
    expect(refusal(opts(out, { preferenceReplayDir: replay }))).toMatch(
      new RegExp(`^output_dir ${out} already holds a run's results \\(config\\.json, agents\\);`),
    );
  });

  it("an extra folder holding a link to itself holds the user's entry", () => {
    const root = tmp();
    const ck = path.join(root, "ck");
    mkdirSync(ck);
    symlinkSync(".", path.join(ck, "self"));
    expect(refusal(opts(path.join(root, "out"), { policyCheckpointDir: ck }))).toMatch(
      new RegExp(`^policy_checkpoint_dir ${ck} holds self, which pbrl did not write there`),
    );
  });

  it("names of the same rank are in the order of their UTF-16 code units, not of their bytes", () => {
    const root = tmp();
    const ck = path.join(root, "ck");
    // U+FFFD is before U+1F600 as UTF-8 bytes (the order readdir gives), after it as UTF-16 code units
    for (const n of ["\u{FFFD}.txt", "\u{1F600}.txt"]) write(path.join(ck, n));
    expect(readdirSync(ck)).toEqual(["\u{FFFD}.txt", "\u{1F600}.txt"]);
    expect(refusal(opts(path.join(root, "out"), { policyCheckpointDir: ck }))).toContain(
      `policy_checkpoint_dir ${ck} holds \u{1F600}.txt, \u{FFFD}.txt, which pbrl did not write there`,
    );
  });

  it("an output_dir that is a file is named as it was given", () => {
    const d = tmp();
    write(path.join(d, "file"));
    const given = path.relative(process.cwd(), path.join(d, "file"));
    expect(path.isAbsolute(given)).toBe(false);
    expect(refusal(opts(given))).toBe(`output_dir ${given} is a file, not a folder; choose a folder path for the run's outputs`);
  });
});

describe("openRunDir, what it lists and says", () => {
  it("a fresh run's marker lists exactly the names it writes, before it writes any, and nothing is said", () => {
    const d = tmp();
    const lines: string[] = [];
    const o = opts(d, { log: (l) => lines.push(l) });
    const release = openRunDir(o, planRunDir(o));
    expect([...(readRunMarker(d) as Set<string>)].sort()).toEqual([...RUN_OUTPUTS].sort());
    expect(lines).toEqual([]);
    release();
  });

  it("a resumed run lists its names in a new extra folder, which holds nothing of anyone's", () => {
    const root = tmp();
    const out = path.join(root, "out");
    checkpointedRun(out, true);
    const replay = path.join(root, "replay");
    const o = opts(out, { resumeLatest: true, preferenceReplayDir: replay });
    const release = openRunDir(o, planRunDir(o));
    expect([...(readRunMarker(replay) as Set<string>)].sort()).toEqual(["iteration_0001.json", "iteration_0002.json"]);
    release();
  });

  it("a listed entry that is gone is dropped from the marker when the folder is opened", () => {
    const d = tmp();
    checkpointedRun(d, true);
    writeRunMarker(d, [...RUN_OUTPUTS, "gone_entry", "kept_entry"]);
    write(path.join(d, "kept_entry"));
    const o = opts(d, { resumeLatest: true });
    const release = openRunDir(o, planRunDir(o));
    expect([...(readRunMarker(d) as Set<string>)].sort()).toEqual([...RUN_OUTPUTS, "kept_entry"].sort());
    release();
  });

  it("removes a dead writer's temporaries of the marker and of a name only the marker lists", () => {
    const d = tmp();
    const dead = 999_999_999;
    writeRunMarker(d, ["old_entry"]);
    write(path.join(d, `.${RUN_MARKER}.tmp-${dead}-0123abcd`), "half");
    write(path.join(d, `.old_entry.tmp-${dead}-0123abcd`), "half");
    const o = opts(d);
    openRunDir(o, planRunDir(o))();
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER]);
  });

  it("an entry to replace that is gone by the time the folder is opened is no error", () => {
    const d = tmp();
    write(path.join(d, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
    write(path.join(d, "agents", "agent_0", "w"));
    writeRunMarker(d, RUN_OUTPUTS);
    const o = opts(d, { overwrite: true });
    const plan = planRunDir(o);
    rmSync(path.join(d, "agents"), { recursive: true });
    openRunDir(o, plan)();
    expect(readdirSync(d).sort()).toEqual([RUN_MARKER]);
  });

  it("people's picks set aside in output_dir are listed only in output_dir's marker, also without a log", () => {
    // the other folder new (no marker yet), or marked
    for (const marked of [false, true]) {
      const root = tmp();
      const out = path.join(root, "out");
      const replay = path.join(root, "replay");
      write(path.join(out, "config.json"), JSON.stringify({ trainer: "madpo_iter" }));
      write(path.join(out, "human_labels", "round_0001.json"), "picks");
      writeRunMarker(out, RUN_OUTPUTS);
      if (marked) {
        mkdirSync(replay);
        writeRunMarker(replay, []);
      }
      const o = opts(out, { overwrite: true, preferenceReplayDir: replay });
      const release = openRunDir(o, planRunDir(o));
      const kept = readdirSync(out).filter((n) => n.startsWith("human_labels.before-"));
      expect(kept).toHaveLength(1);
      expect([...(readRunMarker(out) as Set<string>)]).toContain(kept[0]);
      expect([...(readRunMarker(replay) as Set<string>)].sort()).toEqual(["iteration_0001.json", "iteration_0002.json"]);
      release();
    }
  });
});
