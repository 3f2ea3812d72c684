import { promises as fs } from "node:fs";
import * as path from "node:path";
import { RngStream } from "@pbrl/core-tensor";
import type { ReplayIndexEntry, ReplayState } from "@pbrl/preference-data";
import { beforeEach, describe, expect, it } from "vitest";
import { OnDiskReplayBuffer, readIndexedRound, ReplayError } from "../src/index.js";
import { charTokenize, makeRound, tempDir } from "./helpers.js";

let dir: string;
let state: ReplayState;
let contents: Map<string, string>;

const fileOf = (r: number): string => path.join(dir, `iteration_000${r}.json`);
const fresh = (): OnDiskReplayBuffer => new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(2) });

async function expectOthersIntact(except: number): Promise<void> {
  for (const [file, text] of contents) if (file !== fileOf(except)) expect(await fs.readFile(file, "utf8")).toBe(text);
}

beforeEach(async () => {
  // One level down, so that "../" names a folder of this test's own.
  dir = path.join(await tempDir(), "replay");
  const buffer = fresh();
  for (const [i, n] of [3, 0, 4, 2].entries()) await buffer.addRound(i + 1, makeRound(i + 1, n));
  state = buffer.getState();
  contents = new Map();
  for (let r = 1; r <= 4; r++) contents.set(fileOf(r), await fs.readFile(fileOf(r), "utf8"));
});

describe("restore", () => {
  it("accepts an intact index; files of rounds not in it are ignored", async () => {
    const buffer = fresh();
    await buffer.restore(state);
    expect(buffer.getState()).toEqual(state);
    expect(state.entries.map((e) => e.iteration)).toEqual([1, 3, 4]);
  });

  it("a deleted file is an error naming it", async () => {
    await fs.rm(fileOf(3));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json: file not found/);
    await expectOthersIntact(3);
  });

  it("a truncated file is an error naming it", async () => {
    await fs.writeFile(fileOf(3), contents.get(fileOf(3))!.slice(0, 40));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json is not valid JSON \(truncated or corrupt\?\)/);
    await expectOthersIntact(3);
  });

  it("a file whose num_pairs was edited is an error naming it", async () => {
    const body = JSON.parse(contents.get(fileOf(3))!);
    await fs.writeFile(fileOf(3), JSON.stringify({ ...body, num_pairs: 7 }));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json does not match the schema: num_pairs: is 7 but the file holds 4 pairs/);
    await expectOthersIntact(3);
  });

  it("a file replaced by one with a different pair count is an error naming it", async () => {
    const body = JSON.parse(contents.get(fileOf(3))!);
    await fs.writeFile(fileOf(3), JSON.stringify({ ...body, num_pairs: 1, pairs: body.pairs.slice(0, 1) }));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json holds 1 pairs but the replay index expects 4/);
  });

  it("a file rewritten with as many pairs (another run in the same folder) is caught by its SHA-256", async () => {
    const body = JSON.parse(contents.get(fileOf(3))!);
    body.pairs[0].winner_completions = ["something else", "entirely"];
    await fs.writeFile(fileOf(3), JSON.stringify(body));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json was rewritten after the replay index recorded it/);
    await expectOthersIntact(3);
  });

  it("a file holding another iteration is an error naming it", async () => {
    const body = JSON.parse(contents.get(fileOf(3))!);
    await fs.writeFile(fileOf(3), JSON.stringify({ ...body, iteration: 9 }));
    await expect(fresh().restore(state)).rejects.toThrow(/iteration_0003\.json holds iteration 9 but the replay index expects iteration 3/);
  });

  it("reports every bad file at once and leaves the buffer's index unchanged", async () => {
    const buffer = fresh();
    await buffer.addRound(1, makeRound(1, 2, "kept"));
    const before = buffer.getState();
    await fs.rm(fileOf(1));
    await fs.writeFile(fileOf(4), "{");
    const error = await buffer.restore(state).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/iteration_0001\.json: file not found/);
    expect(error?.message).toMatch(/iteration_0004\.json is not valid JSON/);
    expect(buffer.getState()).toEqual(before);
  });

  it.each<[string, unknown, RegExp]>([
    ["no entries array", {}, /entries array/],
    ["a non-object entry", { entries: [3] }, /entry 0 is not an object/],
    ["a bad iteration", { entries: [{ iteration: 0, file: "iteration_0000.json", num_pairs: 1 }] }, /entry 0: iteration must be an integer ≥ 1, got 0/],
    ["a missing file name", { entries: [{ iteration: 1, num_pairs: 1 }] }, /entry 0: file must be a non-empty path/],
    [
      "an empty dataset",
      { entries: [{ iteration: 1, file: "iteration_0001.json", num_pairs: 0 }] },
      /entry 0 \(iteration_0001\.json\): num_pairs must be an integer ≥ 1, got 0/,
    ],
    [
      "iterations out of order",
      {
        entries: [
          { iteration: 3, file: "iteration_0003.json", num_pairs: 4 },
          { iteration: 1, file: "iteration_0001.json", num_pairs: 3 },
        ],
      },
      /entry 1 \(iteration_0001\.json\): iterations must increase, got 1 after 3/,
    ],
  ])("rejects a malformed state: %s", async (_name, bad, message) => {
    await expect(fresh().restore(bad as ReplayState)).rejects.toThrow(message);
  });

  it("a missing file's error says how to resume", async () => {
    await fs.rm(fileOf(3));
    await expect(fresh().restore(state)).rejects.toThrow(
      /iteration_0003\.json: file not found\. Resuming needs the round files exactly as the checkpoint indexed them: set preference_replay_dir to the folder the run wrote them to, put the original files back, or resume from an earlier checkpoint$/,
    );
  });

  it("an entry whose count disagrees with its file is an error naming the file", async () => {
    const edited = { entries: state.entries.map((e) => (e.iteration === 4 ? { ...e, num_pairs: 5 } : e)) };
    await expect(fresh().restore(edited)).rejects.toThrow(/iteration_0004\.json holds 2 pairs but the replay index expects 5/);
  });

  it.each<[string, (e: ReplayIndexEntry) => string]>([
    ["a path that climbs out of the replay directory", () => "../outside.json"],
    ["an absolute path", () => path.join(dir, "..", "outside.json")],
    ["a path that leaves and comes back", () => `../${path.basename(dir)}/iteration_0001.json`],
    ["another round's file", () => "iteration_0003.json"],
  ])("an entry naming %s is refused before any file is read", async (_name, fileFor) => {
    // A copy of round 1 outside the directory, with the right hash: only the name can give it away.
    await fs.writeFile(path.join(dir, "..", "outside.json"), contents.get(fileOf(1))!);
    const edited = { entries: state.entries.map((e, i) => (i === 0 ? { ...e, file: fileFor(e) } : e)) };
    const buffer = fresh();
    const err = await buffer.restore(edited).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayError);
    expect((err as Error).message).toBe(
      `replay state entry 0: file must be iteration_0001.json, the round file inside the replay directory, got ${JSON.stringify(fileFor(state.entries[0]!))}; the checkpoint's replay state was edited or comes from elsewhere, resume from an intact checkpoint`,
    );
    expect(buffer.getState().entries).toEqual([]);
  });

  it("readIndexedRound refuses an entry outside the directory", async () => {
    const entry = { iteration: 1, file: "../outside.json", num_pairs: 3 };
    await fs.writeFile(path.join(dir, "..", "outside.json"), contents.get(fileOf(1))!);
    await expect(readIndexedRound(dir, entry)).rejects.toThrow(
      new ReplayError(`replay round 1: file "../outside.json" is not inside the replay directory ${dir}; a replay index names only files in that directory`),
    );
  });

  it("a restored buffer accepts only later rounds and replays the restored data", async () => {
    const buffer = new OnDiskReplayBuffer({ mode: "all_history", dir, rng: RngStream.fromSeed(2), sampleSize: 60 });
    await buffer.restore(state);
    await expect(buffer.addRound(4, [])).rejects.toThrow(/round 4 comes after round 4/);
    await buffer.addRound(5, []);
    const selected = await buffer.select(5, [], charTokenize);
    expect(selected).toHaveLength(60);
    expect(new Set(selected.map((p) => p.record.prompts[0]!.split(" ")[0]))).toEqual(new Set(["r1", "r3", "r4"]));
  });
});
