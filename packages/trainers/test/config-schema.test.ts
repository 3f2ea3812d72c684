import { describe, expect, it } from "vitest";
import { TRAINER_CONFIGS, configJsonSchema, fieldJsonSchema, type Fields, type JsonSchema } from "../src/index.js";

describe("JSON Schema of the configs", () => {
  for (const [trainer, { configName, fields }] of Object.entries(TRAINER_CONFIGS) as [string, { configName: string; fields: Fields }][]) {
    it(`${configName}: every field with its description and default, and no other key`, () => {
      const s = configJsonSchema(fields, { title: configName });
      expect(s).toMatchObject({ $schema: "http://json-schema.org/draft-07/schema#", title: configName, type: "object", additionalProperties: false });
      const props = s.properties as Record<string, JsonSchema>;
      expect(Object.keys(props)).toEqual(Object.keys(fields));
      for (const [name, p] of Object.entries(props)) {
        expect(p.description, `${trainer}.${name}`).toMatch(/\S/);
        expect(p, `${trainer}.${name}`).toHaveProperty("default");
        expect(p.default, `${trainer}.${name}`).toEqual(fields[name]!.parse(undefined));
        // pbrl's own metadata keys stay out of the schema.
        expect(
          Object.keys(p).filter((k) => ["accepts", "typeLabel", "choices", "aliases"].includes(k)),
          `${trainer}.${name}`,
        ).toEqual([]);
      }
      expect(JSON.parse(JSON.stringify(s))).toEqual(s);
    });
  }

  it("writes types and bounds zod knows, and a choice's names and aliases (a preprocessed field keeps its default)", () => {
    const f = TRAINER_CONFIGS.madpo_iter.fields;
    expect(fieldJsonSchema(f.comparator_policy)).toMatchObject({ type: "string", default: "current" });
    expect(fieldJsonSchema(f.comparator_policy).enum).toEqual(expect.arrayContaining(["current", "history", "api", "previous", "http"]));
    expect(fieldJsonSchema(f.pair_selection)).toMatchObject({ default: "comparator_reward", enum: ["reward_gap", "all", "random", "comparator_reward"] });
    expect(fieldJsonSchema(f.num_iterations)).toMatchObject({ type: "integer", minimum: 1, default: 6 });
    expect(fieldJsonSchema(f.top_k)).toMatchObject({ default: 50, anyOf: [{ type: "integer", minimum: 0 }, { type: "null" }] });
    expect(fieldJsonSchema(f.dpo_beta)).toMatchObject({ type: "number", exclusiveMinimum: 0, default: 0.1 });
    expect(fieldJsonSchema(f.preference_replay_lambda)).toMatchObject({ default: null, anyOf: [{ type: "number", minimum: 0, maximum: 1 }, { type: "null" }] });
    expect(fieldJsonSchema(f.agent_devices)).toMatchObject({ default: null });
    expect(fieldJsonSchema(f.comparator_api_key)).toMatchObject({ type: "null", default: null });
    const resume = JSON.stringify(fieldJsonSchema(f.resume_from_checkpoint));
    for (const t of ['"type":"string"', '"type":"boolean"', '"type":"null"']) expect(resume).toContain(t);
  });
});
