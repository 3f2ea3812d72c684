import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";

describe("every problem of a command at once", () => {
  it("reports unknown keys together with the fields' and rules' problems", async () => {
    // Before: the unknown key was reported alone, hiding the other two.
    const r = await runCli(["config", "validate", "madpo_iter", "num_agnets=3", "dpo_beta=0", "pair_selection=all"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^invalid madpo_iter run configuration:\n/);
    expect(r.err).toMatch(/ {2}- num_agnets: unknown key for trainer madpo_iter \(did you mean "num_agents"\?\)\n/);
    expect(r.err).toMatch(/ {2}- dpo_beta: got 0; expected a finite number > 0\n/);
    expect(r.err).toMatch(/ {2}- preference_pairs_per_sample: got 4; pair_selection="all" keeps every non-tied pair/);
  });

  it("suggests run keys as well as fields for an unknown key", async () => {
    const r = await runCli(["config", "validate", "madpo", "reward_fun=x.mjs", "top_p=3"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/reward_fun: unknown key for trainer madpo \(did you mean "reward_func"\?\)/);
    expect(r.err).toMatch(/top_p: got 3; expected a number in \(0, 1\]/);
  });

  it("keeps the config's own heading when every key is known", async () => {
    const r = await runCli(["config", "validate", "madpo", "dpo_beta=0"]);
    expect(r.err).toMatch(/^invalid MADPOConfig:\n {2}- dpo_beta/);
  });

  it("demo: an unknown key and a bad value, both, before any work", async () => {
    const r = await runCli(["demo", "dpo_beta=0", "num_train_epoch=1"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/num_train_epoch: unknown key for trainer madpo_iter \(did you mean "num_train_epochs"\?\)/);
    expect(r.err).toMatch(/dpo_beta: got 0/);
  });
});

describe("did you mean, for a misspelt choice", () => {
  it("suggests the name instead of only listing twenty", async () => {
    // Before: `expected one of` and twenty names, "history" among them.
    const r = await runCli(["config", "validate", "madpo_iter", "comparator_policy=histroy"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/comparator_policy: got "histroy"; did you mean "history"\? \(one of "current", "current_copy", "model", "history", "api"/);
  });
});

describe("pbrl config validate prints no secret", () => {
  it("redacts comparator_api_extra_body's key and a credential in the URL, as config.json does", async () => {
    const r = await runCli([
      "config",
      "validate",
      "madpo_iter",
      "comparator_policy=api",
      "comparator_api_url=https://api.example.com/v1?access_key_id=AKIDsecret42",
      'comparator_api_extra_body={"api_key": "sk-live-abcdef1234567890", "temperature": 0.5}',
    ]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).not.toMatch(/AKIDsecret42|sk-live-abcdef1234567890/);
    const printed = JSON.parse(r.out) as { comparator_api_extra_body: Record<string, unknown> };
    expect(printed.comparator_api_extra_body).toEqual({ api_key: "[REDACTED]", temperature: 0.5 });
  });
});
