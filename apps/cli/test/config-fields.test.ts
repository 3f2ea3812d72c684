import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { TRAINER_CONFIGS, fieldDocs } from "@pbrl/trainers";
import { describe, expect, it } from "vitest";
import { RUN_KEYS } from "../src/run-config.js";
import { runCli } from "./capture.js";

/** The rows of the first table in `text` (its header starts with FIELD), each cell's wrapped lines joined again. */
function parseTable(text: string): Record<string, string>[] {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.startsWith("FIELD "));
  const header = lines[at]!;
  const names = header.split(/ {2,}/);
  const starts = names.map((n) => header.indexOf(n));
  const rows: string[][] = [];
  for (const line of lines.slice(at + 1)) {
    if (line === "") break;
    const cells = starts.map((s, i) => line.slice(s, starts[i + 1]).trim());
    if (cells[0] !== "") rows.push(cells);
    else cells.forEach((c, i) => c !== "" && (rows.at(-1)![i] += ` ${c}`));
  }
  return rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]!])));
}

describe("pbrl config fields", () => {
  it("prints every field of a trainer with its type, default and description", async () => {
    // Before: `pbrl config validate madpo_iter` printed the fields and defaults, but nothing said what they do.
    const r = await runCli(["config", "fields", "madpo_iter"]);
    expect(r.code, r.err).toBe(0);
    const docs = fieldDocs(TRAINER_CONFIGS.madpo_iter.fields);
    expect(r.out).toMatch(new RegExp(`^MADPOIterConfig \\(trainer madpo_iter\\): ${docs.length} fields\\n\\nFIELD +TYPE +DEFAULT +DESCRIPTION\\n`));
    const rows = parseTable(r.out);
    expect(rows.map((row) => row["FIELD"])).toEqual(docs.map((d) => d.name));
    rows.forEach((row, i) => expect(row["DESCRIPTION"], docs[i]!.name).toBe(docs[i]!.description));
    expect(rows.find((row) => row["FIELD"] === "comparator_policy")).toMatchObject({
      TYPE: "current | current_copy | model | history | api",
      DEFAULT: "current",
    });
    expect(rows.find((row) => row["FIELD"] === "num_iterations")).toMatchObject({ TYPE: "int ≥ 1", DEFAULT: "6" });
    for (const k of RUN_KEYS) expect(r.out, k).toMatch(new RegExp(`^${k} `, "m"));
    for (const line of r.out.split("\n")) expect(line.length, line).toBeLessThanOrEqual(Math.max(80, process.stdout.columns ?? 120));
  });

  it("without TRAINER, lists the fields of all four with their trainers and each trainer's default", async () => {
    const r = await runCli(["config", "fields"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^FIELD +TRAINERS +TYPE +DEFAULT +DESCRIPTION$/m);
    expect(r.out).toMatch(/^preference_scoring_reward +marlhf_iter /m);
    const epochs = parseTable(r.out).find((row) => row["FIELD"] === "num_train_epochs");
    expect(epochs).toMatchObject({ TRAINERS: "all", DEFAULT: "madpo, marlhf: 20; madpo_iter: 1; marlhf_iter: 2" });
  });

  it("--json gives the same as data", async () => {
    const r = await runCli(["config", "fields", "--json", "marlhf"]);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as {
      trainers: Record<string, { configName: string; fields: { name: string; default: unknown; description: string }[] }>;
      runKeys: { name: string }[];
    };
    expect(Object.keys(j.trainers)).toEqual(["marlhf"]);
    expect(j.trainers["marlhf"]!.configName).toBe("MARLHFConfig");
    expect(j.trainers["marlhf"]!.fields.find((f) => f.name === "rl_algorithm")).toMatchObject({
      default: "magrpo",
      description: expect.stringMatching(/RL algorithm/),
    });
    expect(j.runKeys.map((k) => k.name)).toEqual([...RUN_KEYS]);
  });

  it("names a bad trainer or a misspelt subcommand", async () => {
    const a = await runCli(["config", "fields", "madpo_itr"]);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/trainer: got "madpo_itr"/);
    const b = await runCli(["config", "feilds"]);
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/unknown subcommand "feilds" \(did you mean "fields"\?\)/);
    const c = await runCli(["config", "fields", "--jsn"]);
    expect(c.err).toMatch(/unknown option --jsn \(did you mean --json\?\)/);
  });
});

describe("pbrl config schema", () => {
  it("prints a JSON Schema of the trainer's run file: the run keys and every field, described, with defaults", async () => {
    const r = await runCli(["config", "schema", "madpo_iter"]);
    expect(r.code, r.err).toBe(0);
    const s = JSON.parse(r.out) as {
      $schema: string;
      additionalProperties: boolean;
      properties: Record<string, { description?: string; default?: unknown; enum?: unknown[] }>;
    };
    expect(s.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(s.additionalProperties).toBe(false);
    expect(Object.keys(s.properties)).toEqual([...RUN_KEYS, ...Object.keys(TRAINER_CONFIGS.madpo_iter.fields)]);
    expect(s.properties["trainer"]!.enum).toEqual(["madpo_iter"]);
    for (const [k, p] of Object.entries(s.properties)) expect(p.description, k).toMatch(/\S/);
    expect(s.properties["comparator_policy"]).toMatchObject({ default: "current", enum: expect.arrayContaining(["history", "previous"]) });
    expect(s.properties["num_iterations"]).toMatchObject({ type: "integer", minimum: 1, default: 6 });
  });

  it("--out writes it to a file; TRAINER is required", async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-schema-")), "marlhf.schema.json");
    const r = await runCli(["config", "schema", "marlhf", "--out", out]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe("");
    expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({ title: "pbrl marlhf run file" });
    const none = await runCli(["config", "schema"]);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/usage: pbrl config schema TRAINER/);
  });
});
