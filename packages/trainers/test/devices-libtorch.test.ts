// Devices and bf16 made real on libtorch: a bf16 MADPO run saving bfloat16 agents, the libtorch
// build's own error for a device it lacks (naming the field), agents training one iterative round
// on the devices PBRL_TEST_DEVICES names (default "cpu"; scripts/gpu/check.sh passes cuda:0 and
// cuda:1), and every MARLHF role's models on the device its field names. Skipped without the
// libtorch addon, unless PBRL_REQUIRE_LIBTORCH=1 (then a missing addon fails).
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { computePrecision, deviceOf, loadLibtorchAddon, nativeThreads, parseBackendName, setComputePrecision, tf, useBackend } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { ConfigError, MADPOIterTrainer, MADPOTrainer, MARLHFTrainer } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { trainerWith, unusedDir } from "./device-runs.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;
const info = load.ok ? load.info : undefined;

/** Two devices for two agents: PBRL_TEST_DEVICES (comma-separated; one name is used twice), else the CPU. */
const listed = (process.env["PBRL_TEST_DEVICES"] ?? "cpu")
  .split(",")
  .map((d) => d.trim())
  .filter((d) => d !== "");
const DEVICES = [listed[0] ?? "cpu", listed[1] ?? listed[0] ?? "cpu"] as const;
const SWAPPED = [DEVICES[1], DEVICES[0]];

afterEach(async () => {
  if (tf.getBackend() === "libtorch") setComputePrecision("float32");
  await useBackend(parseBackendName(process.env["PBRL_BACKEND"] ?? "wasm"));
});

/** The dtype of every tensor in a safetensors file, from its JSON header. */
function safetensorsDtypes(file: string): string[] {
  const bytes = readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8")) as Record<string, { dtype?: string }>;
  return Object.entries(header).flatMap(([name, entry]) => (name === "__metadata__" ? [] : [entry.dtype ?? "?"]));
}

describe.skipIf(missing !== undefined)(`device fields and bf16 on libtorch${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it("a short MADPO run with agent_devices=cpu and bf16 trains, and save_dtype=bfloat16 writes BF16 agents", async () => {
    const t = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items.slice(0, 3),
      rewardFunc: countE,
      args: small({ backend: "libtorch", agent_devices: "cpu", bf16: true, save_dtype: "bfloat16", num_train_epochs: 1, eval_interval: 0 }),
    });
    const agents = await t.agents();
    expect(agents.map((a) => a.model.device())).toEqual(["cpu", "cpu"]);
    expect(computePrecision()).toBe("bf16");
    const r = await t.train();
    expect(r.trained).toBe(true);
    expect(r.updates).toBeGreaterThan(0);
    for (const i of [0, 1]) {
      const dir = path.join(r.outputDir, "agents", `agent_${i}`);
      const dtypes = safetensorsDtypes(path.join(dir, "model.safetensors"));
      expect(dtypes.length).toBeGreaterThan(0);
      expect(new Set(dtypes)).toEqual(new Set(["BF16"]));
      // The bfloat16 checkpoint loads back, and holds the trained weights to bfloat16's precision.
      const back = await loadPretrained(dir);
      const saved = back.model.hostWeights().get("model.norm.weight")!.data;
      const trained = agents[i]!.model.hostWeights().get("model.norm.weight")!.data;
      saved.forEach((x, k) => expect(Math.abs(x - trained[k]!)).toBeLessThanOrEqual(Math.abs(trained[k]!) / 128));
      back.model.dispose();
    }
    t.dispose();
  });

  const FIELDS = ["agent_devices", "reference_devices", "comparator_devices", "reward_model_device", "critic_devices"] as const;
  // A CPU build has no CUDA device at all; a CUDA build lacks the one after its last.
  const absent = info?.cuda === true ? `cuda:${info.cudaDevices}` : "cuda:0";
  const why =
    info?.cuda === true
      ? new RegExp(`^device ${absent}: .*only ${info.cudaDevices} CUDA device`)
      : /^device cuda:0: this libtorch has no CUDA support \(a CPU build\)$/;

  it.each(FIELDS)(`%s naming a device this libtorch lacks is a ConfigError with libtorch's reason, before output_dir is written`, async (field) => {
    const out = unusedDir();
    const { run, configName } = trainerWith(field, { backend: "libtorch", [field]: absent }, out);
    const err = (await run.train().catch((e: unknown) => e)) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.configName).toBe(configName);
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]!.startsWith(`${field}: `)).toBe(true);
    expect(err.problems[0]!.slice(field.length + 2)).toMatch(why);
    expect(existsSync(out)).toBe(false);
    run.dispose();
  });

  it(`two agents on ${DEVICES.join(" and ")} train one iterative MADPO round there, with current_copy copies on the comparator devices`, async () => {
    const out = unusedDir();
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      args: {
        ...ITERATIVE_RUN.args,
        backend: "libtorch",
        num_iterations: 1,
        eval_interval: 0,
        verbose: false,
        output_dir: out,
        agent_devices: [...DEVICES],
        comparator_policy: "current_copy",
        comparator_history_k: null,
        comparator_devices: SWAPPED,
      },
      handleSignals: false,
    });
    const agents = await t.agents();
    expect(agents.map((a) => a.model.device())).toEqual([...DEVICES]);
    const before = agents.map((a) => Float32Array.from(a.model.hostWeights().get("model.norm.weight")!.data));
    const r = await t.train();
    expect(r.rounds).toHaveLength(1);
    expect(r.updates).toBeGreaterThan(0);
    // Training left every weight where it was, and moved it.
    for (const [i, a] of agents.entries()) {
      for (const v of a.model.params.values()) expect(deviceOf(v)).toBe(DEVICES[i]);
      expect(Array.from(a.model.hostWeights().get("model.norm.weight")!.data)).not.toEqual(Array.from(before[i]!));
    }
    expect(existsSync(path.join(out, "agents", "agent_1", "model.safetensors"))).toBe(true);
    t.dispose();
  });

  it("MARLHF puts the frozen references and the reward model where reference_devices and reward_model_device say, and runs IAC with critic_devices", async () => {
    const out = unusedDir();
    const t = new MARLHFTrainer({
      agentModel: ITERATIVE_RUN.agentModel,
      trainDataset: ITERATIVE_RUN.trainDataset.slice(0, 4),
      rewardFunc: ITERATIVE_RUN.rewardFunc,
      args: {
        backend: "libtorch",
        agent_devices: [...DEVICES],
        reference_kl_enabled: true,
        reference_devices: SWAPPED,
        reward_model_device: DEVICES[1],
        rl_algorithm: "iac",
        critic_devices: SWAPPED,
        preference_num_candidates: 4,
        max_new_tokens: 6,
        temperature: 1.0,
        top_p: 1.0,
        num_generations: 2,
        train_batch_size: 2,
        num_train_epochs: 1,
        reward_learning_rate: 1e-3,
        reward_train_batch_size: 4,
        eval_interval: 0,
        agent_learning_rate: 1e-3,
        seed: 5,
        verbose: false,
        output_dir: out,
      },
    });
    const r = await t.train();
    expect(r.trained).toBe(true);
    expect((await t.agents()).map((a) => a.model.device())).toEqual([...DEVICES]);
    expect(t.frozenReferences!.map((m) => m.device())).toEqual(SWAPPED);
    const rm = t.fittedRewardModel!;
    expect(rm.backbone.device()).toBe(DEVICES[1]);
    for (const v of rm.head.params.values()) expect(deviceOf(v)).toBe(DEVICES[1]);
    t.dispose();
  });
});
