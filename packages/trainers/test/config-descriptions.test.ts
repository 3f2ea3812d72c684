import { describe, expect, it } from "vitest";
import { ConfigError, MADPOConfig, MADPOIterConfig, MARLHFConfig, TRAINER_CONFIGS, closestName, editDistance, fieldDocs } from "../src/index.js";

function problems(build: () => unknown): string[] {
  try {
    build();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("field descriptions", () => {
  for (const [trainer, { configName, fields }] of Object.entries(TRAINER_CONFIGS)) {
    it(`every field of ${configName} (${trainer}) says what it does, in one line, and what it accepts`, () => {
      const docs = fieldDocs(fields);
      expect(docs.length).toBe(Object.keys(fields).length);
      const undocumented = docs.filter((d) => d.description.trim() === "").map((d) => d.name);
      expect(undocumented, `fields without a description: add .describe("…") where ${configName}'s fields are declared`).toEqual([]);
      for (const d of docs) {
        expect(d.description, d.name).not.toMatch(/\n/);
        expect(d.accepts, d.name).not.toBe("a valid value");
        expect(d.typeLabel, d.name).not.toBe("value");
        expect(JSON.parse(JSON.stringify(d.default)), d.name).toEqual(d.default);
      }
    });
  }

  it("overridden fields keep a description of their own, and their new default", () => {
    const iter = fieldDocs(TRAINER_CONFIGS.madpo_iter.fields).find((d) => d.name === "num_train_epochs")!;
    expect(iter).toMatchObject({ default: 1, typeLabel: "int ≥ 1" });
    expect(iter.description).toMatch(/each round/);
    const pairSelection = fieldDocs(TRAINER_CONFIGS.marlhf_iter.fields).find((d) => d.name === "pair_selection")!;
    expect(pairSelection).toMatchObject({ default: "comparator_reward", choices: ["reward_gap", "all", "random", "comparator_reward"] });
  });

  it("lists a choice's names and aliases", () => {
    const policy = fieldDocs(TRAINER_CONFIGS.madpo_iter.fields).find((d) => d.name === "comparator_policy")!;
    expect(policy.choices).toEqual(["current", "current_copy", "model", "history", "api"]);
    expect(policy.aliases).toMatchObject({ previous: "history", http: "api" });
    expect(policy.typeLabel).toBe("current | current_copy | model | history | api");
  });
});

describe("did you mean, for choices", () => {
  it("suggests the closest name of a misspelt choice before listing the names", () => {
    // @ts-expect-error a misspelt choice does not compile; a file or key=value argument still gets this message
    expect(problems(() => MADPOIterConfig({ comparator_policy: "histroy" }))).toEqual([
      'comparator_policy: got "histroy"; did you mean "history"? (one of "current", "current_copy", "model", "history", "api", "self", "online", "copy", "online_copy", "current-offload", "current_offload", "external", "comparator", "reference", "ref", "checkpoint", "previous", "previous_iteration", "http", "endpoint")',
    ]);
    // @ts-expect-error as read from a file: case and spaces are normalised at run time
    expect(problems(() => MADPOConfig({ collaboration_mode: " Centralised " }))[0]).toMatch(
      /^collaboration_mode: got " Centralised "; did you mean "centralized"\? \(one of/,
    );
    // @ts-expect-error a misspelt choice does not compile
    expect(problems(() => MARLHFConfig({ rl_algorithm: "maremx" }))[0]).toMatch(/^rl_algorithm: got "maremx"; did you mean "maremax"\?/);
  });

  it("suggests nothing for a value that is no near miss, and never for one or two letters", () => {
    // @ts-expect-error not a choice
    expect(problems(() => MADPOConfig({ pair_selection: "best" }))).toEqual(['pair_selection: got "best"; expected one of "reward_gap", "all", "random"']);
    // @ts-expect-error not a choice
    expect(problems(() => MARLHFConfig({ critic_type: "z" }))).toEqual(['critic_type: got "z"; expected one of "v", "q"']);
    // @ts-expect-error not a choice
    expect(problems(() => MADPOConfig({ parallel_training: "xla" }))).toEqual(['parallel_training: got "xla"; expected one of "none", "mp", "ddp", "null"']);
    expect(problems(() => MADPOConfig({ parallel_training: 3 as never }))).toEqual(['parallel_training: got 3; expected one of "none", "mp", "ddp", "null"']);
  });

  it("counts a swap of neighbouring letters as one edit", () => {
    expect(editDistance("histroy", "history")).toBe(1);
    expect(editDistance("abc", "abc")).toBe(0);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(closestName("mdoel", ["model", "history"], 1)).toBe("model");
    expect(closestName("xyz", ["model"])).toBeUndefined();
  });
});
