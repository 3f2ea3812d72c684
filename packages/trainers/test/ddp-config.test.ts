// parallel_training="ddp": accepted by every trainer's config with ddp_timeout (transformers'
// name, seconds, 1800), and refused as a ConfigError when a trainer is built where it cannot run —
// saying how to get process groups when the libtorch addon is missing, that no launcher started
// the ranks, that a trainer does not run on ranks yet, or that ranks outnumber agents — before
// output_dir exists.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { distributedAvailable } from "@pbrl/core-tensor";
import type { TaskItem } from "@pbrl/preference-data";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { ConfigError, MADPOConfig, MADPOIterConfig, MADPOIterTrainer, MARLHFConfig, MARLHFIterConfig } from "../src/index.js";
import { ddpProblems } from "../src/parallel/ddp-check.js";

describe("parallel_training=ddp config", () => {
  it("every trainer's config takes ddp and ddp_timeout, default 1800 s", () => {
    for (const build of [MADPOConfig, MADPOIterConfig, MARLHFConfig, MARLHFIterConfig]) {
      expect(build({}).ddp_timeout).toBe(1800);
      const c = build({ parallel_training: "ddp", ddp_timeout: 60 });
      expect([c.parallel_training, c.ddp_timeout]).toEqual(["ddp", 60]);
    }
    expect(() => MADPOConfig({ ddp_timeout: 0 })).toThrow(/ddp_timeout: .*integer ≥ 1/);
    expect(() => MADPOConfig({ parallel_training: "dpp" as "ddp" })).toThrow(/parallel_training/);
  });

  it("ddpProblems: nothing for none/mp; the addon's reason first; then the trainer", () => {
    const missing = { ok: false as const, reason: "the libtorch addon is unavailable: PBRL_PYTHON=… pnpm rebuild" };
    expect(ddpProblems("mp", "madpo_iter", missing, 1)).toEqual([]);
    expect(ddpProblems("none", "madpo_iter", { ok: true }, 1)).toEqual([]);
    expect(ddpProblems("ddp", "madpo_iter", missing, 2)).toEqual([
      'parallel_training: is "ddp", which needs process groups: the libtorch addon is unavailable: PBRL_PYTHON=… pnpm rebuild',
    ]);
    // a trainer must opt in (all four have); another name is refused
    const [p] = ddpProblems("ddp", "some_trainer", { ok: true }, 2);
    expect(p).toMatch(/^parallel_training: is "ddp", which the some_trainer trainer does not run yet .*set parallel_training="mp"/);
    for (const t of ["madpo", "madpo_iter", "marlhf", "marlhf_iter"]) expect(ddpProblems("ddp", t, { ok: true }, 2)).toEqual([]);
    // more ranks than agents: data-parallel replicas; LoRA's shared base: not on ranks
    expect(ddpProblems("ddp", "madpo_iter", { ok: true }, 4)).toEqual([]);
    expect(ddpProblems("ddp", "madpo_iter", { ok: true }, 2, true)[0]).toMatch(/with use_peft=true the agents share one base/);
    expect(ddpProblems("ddp", "madpo_iter", { ok: true }, 2, false)).toEqual([]);
    // A launched rank without ddp would train the whole run alone.
    const [alone] = ddpProblems("none", "madpo", { ok: true }, 2);
    expect(alone).toMatch(/^parallel_training: is "none", but this process is one of WORLD_SIZE=2 ranks .*set parallel_training=ddp/);
  });

  it("a trainer with ddp stops with a ConfigError before output_dir is touched", () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-ddp-cfg-")), "run");
    const items: TaskItem[] = [{ id: "a", topic: "cats" }];
    let err: unknown;
    try {
      new MADPOIterTrainer({
        agentModel: TINY_LLAMA,
        trainDataset: items,
        formatters: [(x) => String(x["topic"]), (x) => String(x["topic"])],
        rewardFunc: (a) => a.map(() => 0),
        args: { num_agents: 2, parallel_training: "ddp", output_dir: out, verbose: false },
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const availability = distributedAvailable();
    // Without the addon the message is its install hint; with it, that no launcher started the ranks.
    expect((err as Error).message).toContain(availability.ok ? '"ddp", but no launcher started this process' : availability.reason);
    expect(existsSync(out)).toBe(false);
  });
});
