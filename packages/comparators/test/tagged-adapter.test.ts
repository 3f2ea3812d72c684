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

  it("builds exactly the documented 2-role prompt: sections one per line, blocks one blank line apart", () => {
    expect(adapter.buildPrompt({}, ["p0", "p1"])).toBe(
      "You are a centralized coordinator that writes the separate outputs of 2 agents.\n\n" +
        "Each output has to satisfy the original prompt of its agent. Keep the outputs separate;\ndo not merge them, and write nothing outside the required tags.\n\n" +
        "Agent 0 original prompt:\np0\n\n" +
        "Agent 1 original prompt:\np1\n\n" +
        "Answer with exactly one section per agent, in this format:\n<agent_0>\n...\n</agent_0>\n<agent_1>\n...\n</agent_1>\n",
    );
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
    // the message names the section indices looked for (0 to numAgents - 1)
    expect(() => adapter.parseCompletion("plain text", {}, 2)).toThrow("no <agent_i> sections (i = 0 … 1) in the joint completion");
    expect(() => adapter.parseCompletion("plain text", {}, 3)).toThrow("no <agent_i> sections (i = 0 … 2) in the joint completion");
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
    // exact messages: the candidate, what came back, what the contract asks for
    const where = "CentralizedAdapter.parseCompletion contract broken for candidate";
    expect(() => splitJointCompletions(returning(5), ["x"], {}, 2)).toThrow(`${where} 0: it must return an array of 2 strings (one per agent), got number`);
    expect(() => splitJointCompletions(returning(undefined), ["x"], {}, 2)).toThrow(
      `${where} 0: it must return an array of 2 strings (one per agent), got undefined`,
    );
    expect(() => splitJointCompletions(returning([7, "b"]), ["x"], {}, 2)).toThrow(`${where} 0: entry 0 is number, not a string`);
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
