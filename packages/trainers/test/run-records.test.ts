// What a run records across rounds and resumes: its counters and logging gate, config.json's
// record (secrets redacted) and the changes each resume made to it, on a real file.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config/define-config.js";
import { checkDataset, recordResumeChanges, runConfigRecord } from "../src/run-config-record.js";
import { freshCounters, passesLoggingGate } from "../src/training-counters.js";

describe("training counters", () => {
  it("start at zero updates and steps, nothing logged yet", () => {
    expect(freshCounters()).toEqual({ updates: 0, envStep: 0, lastLogged: undefined });
    expect(freshCounters()).not.toBe(freshCounters());
  });

  it("the logging gate passes the first line, then one whenever logging_steps steps have passed since the last", () => {
    const c = freshCounters();
    const passed = [3, 4, 5, 6, 7, 8, 10, 11].filter((step) => passesLoggingGate(c, step, 3));
    // 3 (first), 6 (3 past 3), 10 (4 past 6, the first ≥ 3); 4, 5, 7, 8, 11 are fewer than 3 past
    expect(passed).toEqual([3, 6, 10]);
    expect(c.lastLogged).toBe(10);
  });

  it("logging_steps of 1 or less passes every line and records each", () => {
    for (const every of [1, 0]) {
      const c = { updates: 0, envStep: 0, lastLogged: 5 };
      expect([5, 5, 6].map((s) => passesLoggingGate(c, s, every))).toEqual([true, true, true]);
      expect(c.lastLogged).toBe(6);
    }
  });
});

describe("config.json's record", () => {
  it("is the trainer's name, every field and what code supplied, secrets redacted", () => {
    expect(runConfigRecord("madpo_iter", { num_iterations: 2, hf_token: "hf_abcdefghijklmnopqrstuvwxyz" }, { reward_func: "code" })).toEqual({
      trainer: "madpo_iter",
      num_iterations: 2,
      hf_token: "[REDACTED]",
      reward_func: "code",
    });
    expect(runConfigRecord("marlhf", { a: 1 })).toEqual({ trainer: "marlhf", a: 1 });
  });

  it("an empty dataset is refused with the field and what to check; one item is a run", () => {
    let err: unknown;
    try {
      checkDataset("MADPOConfig", []);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toBe(
      "invalid MADPOConfig:\n  - train_dataset: is empty; give a dataset with at least one item (check the file path and its format)",
    );
    expect(() => checkDataset("MADPOConfig", [{ prompt: "p" }] as never)).not.toThrow();
  });

  it("a resume's changes are applied to config.json and appended to resume_changes, atomically, secrets redacted", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-config-"));
    const file = path.join(dir, "config.json");
    writeFileSync(file, JSON.stringify({ trainer: "madpo_iter", num_iterations: 2, verbose: false }));
    await recordResumeChanges(dir, 2, [{ field: "num_iterations", from: 2, to: 4 }]);
    const first = {
      trainer: "madpo_iter",
      num_iterations: 4,
      verbose: false,
      resume_changes: [{ after_round: 2, changes: [{ field: "num_iterations", from: 2, to: 4 }] }],
    };
    expect(readFileSync(file, "utf8")).toBe(JSON.stringify(first, null, 2) + "\n");
    await recordResumeChanges(dir, 4, [
      { field: "verbose", from: false, to: true },
      { field: "comparator_api_key", from: undefined, to: "sk-abcdefghijklmnopqrstuvwx" },
    ]);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      ...first,
      verbose: true,
      comparator_api_key: "[REDACTED]",
      resume_changes: [
        ...first.resume_changes,
        {
          after_round: 4,
          changes: [
            { field: "verbose", from: false, to: true },
            { field: "comparator_api_key", to: "[REDACTED]" },
          ],
        },
      ],
    });
    // a resume_changes that is not a list (edited by hand) is started afresh
    writeFileSync(file, JSON.stringify({ trainer: "madpo_iter", resume_changes: "x" }));
    await recordResumeChanges(dir, 1, []);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ trainer: "madpo_iter", resume_changes: [{ after_round: 1, changes: [] }] });
    expect(readdirSync(dir)).toEqual(["config.json"]);
  });
});
