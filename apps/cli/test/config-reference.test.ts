import { readFileSync } from "node:fs";
import * as path from "node:path";
import { TRAINER_CONFIGS, fieldDocs } from "@pbrl/trainers";
import { describe, expect, it } from "vitest";
import { REFERENCE_COMMAND, configReferenceMarkdown, fieldRows } from "../src/config-docs.js";
import { RUN_KEYS, TRAINERS } from "../src/run-config.js";
import { RUN_KEY_DOCS } from "../src/run-keys.js";

const DOC = path.resolve(import.meta.dirname, "../../../docs/config-reference.md");

describe("docs/config-reference.md", () => {
  it("is what the schemas say today", () => {
    const committed = readFileSync(DOC, "utf8");
    // A failure here means a field, default or description changed since the file was written.
    expect(
      committed === configReferenceMarkdown(),
      `docs/config-reference.md is stale; regenerate it from the repository root with:\n  ${REFERENCE_COMMAND}`,
    ).toBe(true);
  });

  it("has every field of the four trainers and every run key, with its description", () => {
    const text = configReferenceMarkdown();
    for (const t of TRAINERS) {
      for (const d of fieldDocs(TRAINER_CONFIGS[t].fields)) {
        expect(text, `${t}.${d.name}`).toContain(`| \`${d.name}\` |`);
        expect(text, `${t}.${d.name}`).toContain(d.description.replace(/\|/g, "\\|").replace(/\.$/, ""));
      }
    }
    for (const k of RUN_KEYS) expect(text).toContain(`| \`${k}\` |`);
  });

  it("gives each trainer's default where they differ", () => {
    const epochs = fieldRows(TRAINERS).find((r) => r.name === "num_train_epochs")!;
    expect(epochs.default).toBe("madpo, marlhf: 20; madpo_iter: 1; marlhf_iter: 2");
    expect(epochs.trainers).toEqual(TRAINERS);
    const scoring = fieldRows(TRAINERS).find((r) => r.name === "preference_scoring_reward")!;
    expect(scoring.trainers).toEqual(["marlhf_iter"]);
  });
});

describe("run keys", () => {
  it("are each described (run-keys.ts), and nothing else is", () => {
    expect(Object.keys(RUN_KEY_DOCS).sort(), "describe each key of RUN_KEYS in apps/cli/src/run-keys.ts").toEqual([...RUN_KEYS].sort());
    for (const [k, d] of Object.entries(RUN_KEY_DOCS)) expect(d.description, k).toMatch(/\S/);
  });

  it("the trainers of the CLI are the trainers' configs", () => {
    expect([...TRAINERS].sort()).toEqual(Object.keys(TRAINER_CONFIGS).sort());
  });
});
