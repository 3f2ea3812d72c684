import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { overrideValue } from "../src/overrides.js";
import { runCli } from "./capture.js";

async function validated(trainer: string, ...overrides: string[]): Promise<Record<string, unknown>> {
  const r = await runCli(["config", "validate", trainer, ...overrides]);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out) as Record<string, unknown>;
}

describe("key=value overrides are read as their key takes them", () => {
  it("keeps a template for formatters as written, even where YAML reads a mapping", async () => {
    // Before: YAML turned "Text: {txt}" into {Text: {txt: null}}.
    expect((await validated("madpo", "formatters=Text: {txt}")).formatters).toBe("Text: {txt}");
    expect((await validated("madpo", "formatters={topic}")).formatters).toBe("{topic}");
    expect((await validated("madpo", "formatters=Answer #{n}")).formatters).toBe("Answer #{n}");
    expect((await validated("madpo", 'formatters=["{a}", "{b}"]')).formatters).toEqual(["{a}", "{b}"]);
  });

  it("keeps string fields strings (numbers-looking paths and ids included), and parses numbers, booleans and null where the field takes them", async () => {
    const c = await validated(
      "madpo_iter",
      "output_dir=1e3",
      "comparator_policy=History",
      "comparator_history_k=2",
      "top_k=null",
      "dpo_beta=0.25",
      "verbose=false",
      "agent_devices=[cpu, cpu]",
      "parallel_training=null",
    );
    expect(c.output_dir).toBe(path.resolve("1e3"));
    expect(c).toMatchObject({
      comparator_policy: "history",
      comparator_history_k: 2,
      top_k: null,
      dpo_beta: 0.25,
      verbose: false,
      agent_devices: ["cpu", "cpu"],
      parallel_training: "none",
    });
    expect(await validated("madpo_iter", "comparator_policy=model", "comparator_model_name=0x10")).toMatchObject({ comparator_model_name: "0x10" });
    expect(await validated("madpo_iter", "resume_from_checkpoint=true")).toMatchObject({ resume_from_checkpoint: true });
    expect(
      await validated(
        "madpo_iter",
        "comparator_policy=api",
        "comparator_api_url=http://x",
        "comparator_api_key_prefix=",
        "comparator_api_headers={X-Team: a b}",
      ),
    ).toMatchObject({
      comparator_api_key_prefix: "",
      comparator_api_headers: { "X-Team": "a b" },
    });
  });

  it("reads each kind of key", () => {
    expect(overrideValue("formatters", "Text: {txt}")).toBe("Text: {txt}");
    expect(overrideValue("output_dir", "runs/a: b")).toBe("runs/a: b");
    expect(overrideValue("output_dir", '"my run"')).toBe("my run");
    expect(overrideValue("train_dataset_revision", "1234567")).toBe("1234567");
    expect(overrideValue("comparator_model_name", "None")).toBeNull();
    expect(overrideValue("comparator_model_name", "")).toBeNull();
    expect(overrideValue("num_agents", "3")).toBe(3);
    expect(overrideValue("dpo_beta", "abc")).toBe("abc");
    expect(overrideValue("num_agents", "three")).toBe("three");
    expect(overrideValue("not_a_key", "[1, 2]")).toEqual([1, 2]);
  });

  it("still reports a bad value with the value as read", async () => {
    const r = await runCli(["config", "validate", "madpo", "dpo_beta=abc", "num_agents=1.5"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/dpo_beta: got "abc"; expected a finite number > 0/);
    expect(r.err).toMatch(/num_agents: got 1\.5; expected an integer ≥ 1/);
  });
});
