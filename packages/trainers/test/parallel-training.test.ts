import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { untimedMetrics } from "./untimed-metrics.js";
import { describe, expect, it } from "vitest";
import { AdamW, currentBackend, loadNativeAddon, tf, useBackend } from "@pbrl/core-tensor";
import { localAgents, madpoUpdate, NonFiniteError, type TrainableAgent } from "@pbrl/dpo";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { MADPOIterTrainer, MADPOTrainer, MARLHFIterTrainer } from "../src/index.js";
import { AgentWorkers } from "../src/parallel/agent-workers.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-mp-"));

/** Two agents of the tiny fixture, each with its own AdamW (lr 1e-3). */
async function tinyAgents(): Promise<TrainableAgent[]> {
  const out: TrainableAgent[] = [];
  for (let i = 0; i < 2; i++) {
    const { model } = await loadPretrained(TINY);
    out.push({ model, optimizer: new AdamW(model.params, { lr: 1e-3 }), padTokenId: 0 });
  }
  return out;
}

const hash = (m: CausalLM) => {
  const h = createHash("sha256");
  for (const [, t] of m.hostWeights()) h.update(Buffer.from(t.data.buffer));
  return h.digest("hex");
};

const metricsOf = (dir: string) => untimedMetrics(path.join(dir, "metrics.jsonl"));

// The workers compute with the same functions on the same backend as this thread, so on a
// deterministic backend (wasm, cpu: the suites' backends) parallel and sequential runs agree bit for bit.
describe('parallel_training="mp"', () => {
  it("MADPO in agent worker threads trains exactly as in this thread: weights, metrics, evaluations", async () => {
    const lines: string[] = [];
    const runs = [];
    for (const parallel of ["none", "mp"] as const) {
      const args = small({ parallel_training: parallel, agent_devices: "cpu", verbose: parallel === "mp" });
      const trainer = new MADPOTrainer({ agentModel: TINY, trainDataset: items, evalDataset: items, rewardFunc: countE, args, log: (l) => lines.push(l) });
      const r = await trainer.train();
      runs.push({ r, hashes: (await trainer.agents()).map((a) => hash(a.model)), metrics: metricsOf(r.outputDir) });
      trainer.dispose();
    }
    const [seq, mp] = runs;
    expect(seq!.r.updates).toBeGreaterThan(2);
    expect(mp!.hashes).toEqual(seq!.hashes);
    expect(mp!.metrics).toEqual(seq!.metrics);
    expect(mp!.r.evalAfter).toEqual(seq!.r.evalAfter);
    expect(lines.some((l) => /parallel_training="mp": 2 agent worker threads on \w+/.test(l))).toBe(true);
  });

  it("iterative MADPO in worker threads: the same weights, optimizer checkpoints and metrics as in this thread, also after a resume", async () => {
    const runs = [];
    for (const parallel of ["none", "mp"] as const) {
      const dir = tmp();
      const trainer = new MADPOIterTrainer({
        ...ITERATIVE_RUN,
        args: { ...ITERATIVE_RUN.args, num_iterations: 2, output_dir: dir, verbose: false, parallel_training: parallel, agent_devices: ["cpu", "cpu"] },
        handleSignals: false,
      });
      const r = await trainer.train();
      const optimizer = readFileSync(path.join(dir, "checkpoints", "round_0002", "optimizer_1.safetensors"));
      runs.push({
        updates: r.updates,
        hashes: (await trainer.agents()).map((a) => hash(a.model)),
        metrics: metricsOf(dir),
        optimizer: createHash("sha256").update(optimizer).digest("hex"),
      });
      trainer.dispose();
    }
    expect(runs[0]!.updates).toBeGreaterThan(0);
    expect(runs[1]).toEqual(runs[0]);
    // Stopped after round 1 and resumed in worker threads: the same run again.
    const dir = tmp();
    const args = { ...ITERATIVE_RUN.args, output_dir: dir, verbose: false, parallel_training: "mp" as const, agent_devices: "cpu" };
    const first = new MADPOIterTrainer({ ...ITERATIVE_RUN, args: { ...args, num_iterations: 1 }, handleSignals: false });
    await first.train();
    first.dispose();
    const resumed = new MADPOIterTrainer({ ...ITERATIVE_RUN, args: { ...args, num_iterations: 2, resume_from_checkpoint: true }, handleSignals: false });
    const r = await resumed.train();
    expect(r.resumedAfterRound).toBe(1);
    expect((await resumed.agents()).map((a) => hash(a.model))).toEqual(runs[0]!.hashes);
    resumed.dispose();
  });

  it("a worker's non-finite loss stops the update with the same error as in this thread", async () => {
    const agents = await tinyAgents();
    const w = agents[1]!.model.params.get("model.norm.weight")!;
    // finite weights (a worker refuses NaN ones at load) that overflow float32 in the forward pass
    w.assign(tf.fill(w.shape, 3e38));
    const pair: AgentPairTokens = { promptIds: [1, 40], winnerIds: [50, 51, 2], loserIds: [60, 61] };
    const options = { beta: 0.1, scoreLastToken: false, where: "round 3, epoch 1, batch 2" };
    const workers = new AgentWorkers(2, "wasm");
    try {
      await workers.load(agents);
      const inWorkers = madpoUpdate(workers, [[pair, pair]], options);
      await expect(inWorkers).rejects.toThrow(NonFiniteError);
      await expect(inWorkers).rejects.toThrow(/agent 1 .*non-finite.*round 3, epoch 1, batch 2/);
      await expect(madpoUpdate(localAgents(agents), [[pair, pair]], options)).rejects.toThrow(/agent 1 .*non-finite.*round 3, epoch 1, batch 2/);
    } finally {
      await workers.close();
      agents.forEach((a) => (a.optimizer.dispose(), a.model.dispose()));
    }
    // A closed worker answers every later request with an error, never a hang.
    await expect(workers.margins(0, [pair], false)).rejects.toThrow(/agent worker 0 was closed/);
  });

  // Where the addon is built (and always under PBRL_REQUIRE_NATIVE=1, as CI sets), the native
  // path in worker threads: each thread has its own kernel pool, so a worker's setting up its
  // pool must leave this thread's as it was.
  it.runIf(loadNativeAddon().ok || process.env["PBRL_REQUIRE_NATIVE"] === "1")(
    "native kernels in worker threads train as in this thread, within float summation noise",
    async () => {
      const before = currentBackend()!.name;
      await useBackend("native");
      const threads = loadNativeAddon();
      if (!threads.ok) throw new Error(threads.reason);
      const mainThreads = threads.addon.info().threads;
      const local = await tinyAgents();
      const remote = await tinyAgents();
      const batch = (k: number): AgentPairTokens[][] =>
        [0, 1, 2].map((p) => [0, 1].map((a) => ({ promptIds: [1, 40 + p + k], winnerIds: [50 + a, 51, 52 + p, 2], loserIds: [60 + k, 61 + a] })));
      const options = (k: number) => ({ beta: 0.1, scoreLastToken: false, where: `batch ${k}` });
      const workers = new AgentWorkers(2, "native");
      try {
        await workers.load(remote);
        const seen = { local: [] as number[], remote: [] as number[] };
        for (let k = 0; k < 3; k++) {
          seen.local.push((await madpoUpdate(localAgents(local), batch(k), options(k))).loss);
          seen.remote.push((await madpoUpdate(workers, batch(k), options(k))).loss);
        }
        expect(seen.local[2]).toBeLessThan(seen.local[0]!); // both sides learn the batches…
        seen.remote.forEach((l, k) => expect(l).toBeCloseTo(seen.local[k]!, 4)); // …the same way
        await workers.pull(remote, true);
        local.forEach((a, i) => {
          for (const [name, v] of a.model.params) {
            const diff = tf.tidy(() => tf.max(tf.abs(tf.sub(v, remote[i]!.model.params.get(name)!))).dataSync()[0]!);
            expect(diff, name).toBeLessThan(3 * 1e-3); // three AdamW steps of at most lr each
          }
        });
        expect(threads.addon.info().threads).toBe(mainThreads);
      } finally {
        await workers.close();
        [...local, ...remote].forEach((a) => (a.optimizer.dispose(), a.model.dispose()));
        await useBackend(before);
      }
    },
  );

  it("idle workers never keep the process alive: a script that forgets to close them still exits", async () => {
    const dist = (pkg: string) => pathToFileURL(path.join(import.meta.dirname, `../../${pkg}/dist/index.js`)).href;
    const script = `
      const { useBackend, RngStream } = await import(${JSON.stringify(dist("core-tensor"))});
      const { loadPretrained } = await import(${JSON.stringify(dist("models"))});
      const { AgentWorkers } = await import(${JSON.stringify(dist("trainers"))});
      await useBackend("wasm");
      const { model } = await loadPretrained(${JSON.stringify(TINY)});
      const workers = new AgentWorkers(2, "wasm");
      await workers.loadWeights([{ model, padTokenId: 0 }, { model, padTokenId: 0 }]);
      const rows = await workers.generate(1, [[1, 40, 41]], 2, { maxNewTokens: 3, temperature: 1, topP: 1, topK: null, maxBatchRows: 8 }, [2], RngStream.fromSeed(0));
      console.log(JSON.stringify(rows.map((r) => r.length)));`;
    const started = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { timeout: 60_000 });
    expect(JSON.parse(stdout)).toHaveLength(2);
    expect(performance.now() - started).toBeLessThan(60_000);
  });

  it("each worker gets an equal share of the threads PBRL_NATIVE_THREADS allows (else of the cores), at least one", async () => {
    const before = process.env["PBRL_NATIVE_THREADS"];
    try {
      for (const [setting, count, expected] of [
        ["6", 2, 3],
        ["5", 2, 2],
        ["1", 3, 1],
      ] as const) {
        process.env["PBRL_NATIVE_THREADS"] = setting;
        const w = new AgentWorkers(count, "wasm");
        expect(w.threadsPerWorker).toBe(expected);
        await w.close();
      }
      delete process.env["PBRL_NATIVE_THREADS"];
      const w = new AgentWorkers(2, "wasm");
      expect(w.threadsPerWorker).toBe(Math.max(1, Math.floor(availableParallelism() / 2)));
      await w.close();
    } finally {
      if (before === undefined) delete process.env["PBRL_NATIVE_THREADS"];
      else process.env["PBRL_NATIVE_THREADS"] = before;
    }
  });

  it("MARLHF's RL stage in agent worker threads trains exactly as in this thread: the REINFORCE family with the reference KL and a rollout buffer of several mini-batches", async () => {
    const runs = [];
    const lines: string[] = [];
    for (const parallel of ["none", "mp"] as const) {
      const dir = tmp();
      // two rounds, the KL scored in the workers, buffers of 4 items in mini-batches of 2 (shuffled), an evaluation mid-stage
      const args = {
        ...ITERATIVE_RUN.args,
        ...MARLHF_ITER_ARGS,
        num_iterations: 2,
        rollout_buffer_size: 4,
        train_batch_size: 2,
        reference_kl_enabled: true,
        reference_kl_coef: 0.1,
        eval_interval: 4,
        output_dir: dir,
        verbose: parallel === "mp",
        parallel_training: parallel,
        agent_devices: "cpu",
      };
      const trainer = new MARLHFIterTrainer({ ...ITERATIVE_RUN, args, handleSignals: false, log: (l) => lines.push(l) });
      const r = await trainer.train();
      const optimizer = readFileSync(path.join(dir, "checkpoints", "round_0002", "optimizer_1.safetensors"));
      runs.push({
        updates: r.updates,
        hashes: (await trainer.agents()).map((a) => hash(a.model)),
        metrics: metricsOf(dir),
        evalAfter: r.evalAfter,
        optimizer: createHash("sha256").update(optimizer).digest("hex"),
      });
      trainer.dispose();
    }
    // 6 items a round: buffers of 4 and 2 items, 2 + 1 steps per agent
    expect(runs[0]!.updates).toBe(2 * 3);
    expect(runs[0]!.metrics.filter((m) => m["kind"] === "train" && m["rl/updates"] === 2)).toHaveLength(2);
    expect(runs[1]).toEqual(runs[0]);
    expect(lines.some((l) => /parallel_training="mp": 2 agent worker threads on \w+/.test(l))).toBe(true);
  });
});
