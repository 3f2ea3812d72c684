import { describe, expect, it } from "vitest";
import { CentralizedParseError, type CentralizedAdapter } from "@pbrl/preference-data";
import { splitJointCompletions, TaggedCentralizedAdapter } from "../src/index.js";

const adapter = new TaggedCentralizedAdapter();

describe("TaggedCentralizedAdapter", () => {
  it("builds a 3-role prompt with 0-based sections and tags and no auxiliary wording", () => {
    const prompt = adapter.buildPrompt({}, ["write a function", "write its tests", "review both"]);
    expect(prompt).toContain("Agent 0 original prompt:\nwrite a function");
    expect(prompt).toContain("Agent 2 original prompt:\nreview both");
    expect(prompt).toContain("<agent_2>\n...\n</agent_2>");
    expect(prompt).toContain("3 agents");
    expect(prompt.toLowerCase()).not.toContain("auxiliary");
    expect(prompt.endsWith("\n")).toBe(true);
    // blocks separated by one blank line; the instruction breaks after "Keep the outputs separate;"
    expect(prompt).toContain("Keep the outputs separate;\ndo not merge them");
    expect(prompt.split("\n\n").length).toBe(2 + 3 + 1); // role, instructions, 3 prompts, request
  });

  it("parses one section per agent", () => {
    expect(adapter.parseCompletion("<agent_0>a</agent_0><agent_1>b</agent_1><agent_2>c</agent_2>", {}, 3)).toEqual(["a", "b", "c"]);
  });

  it("tolerates spaces in tags, any case, multi-line content, and takes the first shortest match", () => {
    const text = "intro\n< agent_1 >\n  line one\nline two\n</ AGENT_1>\n<Agent_0>x</agent_0> <agent_0>later</agent_0>";
    expect(adapter.parseCompletion(text, {}, 3)).toEqual(["x", "line one\nline two", ""]);
  });

  it("throws CentralizedParseError on text without sections", () => {
    expect(() => adapter.parseCompletion("plain text", {}, 2)).toThrow(CentralizedParseError);
    // agent_10 is not agent_1's section
    expect(() => adapter.parseCompletion("<agent_10>z</agent_10>", {}, 2)).toThrow(CentralizedParseError);
  });
});

describe("splitJointCompletions", () => {
  it("turns unparseable completions into invalid candidates with empty role texts", () => {
    const out = splitJointCompletions(adapter, ["<agent_0>a</agent_0><agent_1>b</agent_1>", "garbage", "<agent_1>only b</agent_1>"], {}, 2);
    expect(out.valid).toEqual([true, false, true]);
    expect(out.texts).toEqual([
      ["a", "", ""],
      ["b", "", "only b"],
    ]);
  });

  it("rejects adapter results that break the contract, naming it", () => {
    const returning = (v: unknown): CentralizedAdapter => ({ buildPrompt: () => "p", parseCompletion: () => v as string[] });
    expect(() => splitJointCompletions(returning("ab"), ["x"], {}, 2)).toThrow(/parseCompletion contract.*a single string/);
    expect(() => splitJointCompletions(returning(["a"]), ["x"], {}, 2)).toThrow(/parseCompletion contract.*exactly 2 strings.*got 1/);
    expect(() => splitJointCompletions(returning(["a", 3]), ["x"], {}, 2)).toThrow(/parseCompletion contract.*entry 1 is number/);
  });

  it("lets errors other than CentralizedParseError through", () => {
    const broken: CentralizedAdapter = {
      buildPrompt: () => "p",
      parseCompletion: () => {
        throw new RangeError("adapter bug");
      },
    };
    expect(() => splitJointCompletions(broken, ["x"], {}, 2)).toThrow("adapter bug");
  });
});
