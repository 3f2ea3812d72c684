// `pbrl train --nproc_per_node N` as real processes: the launcher starts N ranks of the same
// command with torchrun's environment, prefixes their lines with the rank, forms a c10d group
// through that environment, stops every rank when one fails or dies (naming it), and passes
// Ctrl-C to every rank. The ranks are test ranks (PBRL_TEST_RANK, src/launch/test-rank.ts) except
// in the "real runs" tests, which start real `pbrl train` runs.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distributedAvailable, readSafetensors } from "@pbrl/core-tensor";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { compileCli, packagesBuilt } from "./compiled-cli.js";

interface Launch {
  code: number | null;
  out: string;
  err: string;
}

let cli: { main: string; cleanup: () => void } | undefined;
beforeAll(async () => {
  if (packagesBuilt) cli = await compileCli();
}, 120_000);
afterAll(() => cli?.cleanup());

/** Runs `pbrl train ARGS` with extra env; `onErr` sees the launcher's stderr as it grows (to send signals). */
function launch(args: string[], env: Record<string, string>, onErr?: (err: string, pid: number) => void): Promise<Launch> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli!.main, "train", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      onErr?.(err, child.pid!);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

/**
 * A folder with a tiny two-agent run's data (`prompts`, one JSON line each) and a reward that
 * counts "e"s, and the arguments of that run on the test model (more `extra` key=value pairs).
 */
function tinyTeamRun(prefix: string, trainer: string, prompts: readonly string[], extra: readonly string[]): { dir: string; args: string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  writeFileSync(path.join(dir, "train.jsonl"), prompts.map((prompt) => JSON.stringify({ prompt })).join("\n"));
  writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).split('e').length);\n");
  const args = [
    `agent_model=${TINY_LLAMA}`,
    `train_dataset=${path.join(dir, "train.jsonl")}`,
    `reward_func=${path.join(dir, "reward.mjs")}`,
    `trainer=${trainer}`,
    "num_agents=2",
    "preference_num_candidates=4",
    "max_new_tokens=6",
    "temperature=1.0",
    ...extra,
  ];
  return { dir, args };
}

const distributed = distributedAvailable();
const noGroups = distributed.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : distributed.reason;

describe.skipIf(!packagesBuilt)("pbrl train --nproc_per_node", () => {
  it("starts N ranks with torchrun's environment and a share of the cores each, lines prefixed by rank", async () => {
    const r = await launch(["--nproc_per_node", "2", "seed=3"], { PBRL_TEST_RANK: "env", OMP_NUM_THREADS: "", PBRL_NATIVE_THREADS: "" });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/pbrl: launching 2 ranks on \S+ \(node 0 of 1, world size 2, rendezvous 127\.0\.0\.1:\d+/);
    const ranks = r.out
      .trim()
      .split("\n")
      .map((line) => /^\[rank (\d)\] (\{.*\})$/.exec(line)!)
      .map((m): Record<string, unknown> & { prefix: number } => ({ ...(JSON.parse(m[2]!) as Record<string, unknown>), prefix: Number(m[1]) }))
      .sort((a, b) => a.prefix - b.prefix);
    expect(ranks.map((x) => [x.prefix, x["RANK"], x["LOCAL_RANK"], x["WORLD_SIZE"], x["LOCAL_WORLD_SIZE"], x["MASTER_ADDR"]])).toEqual([
      [0, "0", "0", "2", "2", "127.0.0.1"],
      [1, "1", "1", "2", "2", "127.0.0.1"],
    ]);
    expect(ranks[0]!["MASTER_PORT"]).toBe(ranks[1]!["MASTER_PORT"]);
    // OMP_NUM_THREADS and PBRL_NATIVE_THREADS empty (unset): each rank gets half the cores
    const share = String(Math.max(1, Math.floor(availableParallelism() / 2)));
    expect(ranks.map((x) => [x["OMP_NUM_THREADS"], x["PBRL_NATIVE_THREADS"]])).toEqual([
      [share, share],
      [share, share],
    ]);
    expect(ranks[0]!["argv"]).toEqual(["seed=3"]);
  }, 30_000);

  // allreduce-device is the step scripts/gpu/check.sh runs with NCCL or cuda:0; here Gloo on cpu.
  it.skipIf(noGroups !== undefined).each([
    { mode: "allreduce", env: {} as Record<string, string>, line: "allreduce 3" },
    { mode: "allreduce-device", env: { PBRL_TEST_DEVICE: "cpu" }, line: "allreduce 3,30 on cpu via gloo" },
  ])(
    "the ranks form a c10d group from that environment and all-reduce ($mode)",
    async ({ mode, env, line }) => {
      const r = await launch(["--nproc_per_node", "2"], { PBRL_TEST_RANK: mode, ...env });
      expect(r.code, r.err).toBe(0);
      expect(
        r.out
          .split("\n")
          .filter((l) => l !== "")
          .sort(),
      ).toEqual([`[rank 0] ${line}`, `[rank 1] ${line}`]);
    },
    60_000,
  );

  it("a rank that exits non-zero stops the others; the launch exits 1 naming rank, code and host", async () => {
    const r = await launch(["--nproc_per_node", "3"], { PBRL_TEST_RANK: "fail" });
    expect(r.code, r.err).toBe(1);
    // Ranks 0 and 1 wait for a signal forever: the launch ending at all shows they were stopped.
    expect(r.err).toContain(`pbrl train: rank 2 (local rank 2 on host ${hostname()}) exited with code 3; the other ranks were stopped`);
  }, 30_000);

  it("a rank killed by SIGKILL: the launch exits 1 naming the signal", async () => {
    const r = await launch(["--nproc_per_node", "2"], { PBRL_TEST_RANK: "sigkill" });
    expect(r.code, r.err).toBe(1);
    expect(r.err).toContain(`pbrl train: rank 1 (local rank 1 on host ${hostname()}) was killed by SIGKILL; the other ranks were stopped`);
  }, 30_000);

  it("SIGINT on the launcher reaches every rank once; the launch exits 130 as a stopped run", async () => {
    let sent = false;
    const r = await launch(["--nproc_per_node", "2"], { PBRL_TEST_RANK: "wait" }, (err, pid) => {
      if (!sent && (err.match(/waiting for a signal/g) ?? []).length === 2) {
        sent = true;
        process.kill(pid, "SIGINT");
      }
    });
    expect(r.code, r.err).toBe(130);
    expect(r.err).toContain("pbrl: SIGINT: passing it to every rank");
    // Both ranks wait for a signal forever: the launch ending with 130 shows both were stopped by
    // it (a rank that failed instead would make it 1). Their "stopped by SIGINT" lines are not
    // required: one went missing once in ~6 runs under a loaded suite, cause not yet found.
    expect(r.err).toMatch(/\[rank \d\] stopped by SIGINT/);
    expect(r.err).not.toMatch(/other ranks were stopped/);
  }, 30_000);

  it("real runs: a config without parallel_training=ddp is refused on every rank (exit 2), nothing written", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-launch-"));
    writeFileSync(path.join(dir, "train.jsonl"), JSON.stringify({ prompt: "The cat" }));
    writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map(() => 0);\n");
    const out = path.join(dir, "out");
    const args = [
      `agent_model=${TINY_LLAMA}`,
      `train_dataset=${path.join(dir, "train.jsonl")}`,
      `reward_func=${path.join(dir, "reward.mjs")}`,
      "trainer=madpo_iter",
      `output_dir=${out}`,
    ];
    const r = await launch(["--nproc_per_node", "2", ...args], {});
    expect(r.code, r.err).toBe(2);
    expect(r.err).toMatch(/\[rank \d\] .*parallel_training: is "none", but this process is one of WORLD_SIZE=2 ranks/);
    expect(r.err).toMatch(/pbrl train: rank \d \(local rank \d on host \S+\) exited with code 2; the other ranks were stopped/);
    expect(existsSync(out)).toBe(false);
  }, 60_000);

  it.skipIf(noGroups !== undefined).each(["madpo_iter", "marlhf_iter"])(
    "parallel_training=ddp, %s, 2 ranks, 2 agents: the agents, checkpoints and replay files of the single-process run, byte for byte",
    async (trainer) => {
      const { dir, args } = tinyTeamRun("pbrl-ddp-run-", trainer, ["The cat", "We drink", "A bird"], ["num_iterations=2"]);
      // The same threads per agent: one here, one per rank there (the launcher's share of 2 cores, set explicitly).
      const one = { OMP_NUM_THREADS: "1", PBRL_NATIVE_THREADS: "1" };
      const single = await launch([...args, `output_dir=${path.join(dir, "single")}`], one);
      expect(single.code, single.err).toBe(0);
      const ddp = await launch(["--nproc_per_node", "2", ...args, "parallel_training=ddp", `output_dir=${path.join(dir, "ddp")}`], one);
      expect(ddp.code, ddp.err).toBe(0);
      expect(ddp.err).toMatch(/\[rank 1\] pbrl: rank 1 of 2 \(pid \d+\): hosting agent 1/);
      expect(ddp.err).toMatch(/\[rank 0\] pbrl: parallel_training="ddp": 2 agents on 2 ranks/);
      // agent_devices unset, on a backend without GPUs: every rank places its agent on the CPU.
      expect(ddp.err).toMatch(/\[rank 0\] pbrl: agent workers' devices: agent 0 cpu; agent 1 cpu\n/);
      // What crossed between the ranks: each round agent 1's weights went out to collect, its weights
      // and AdamW state to train, and came back (4, 12 and 12 bytes a parameter, the first round's
      // state empty), measured on rank 0's side of the channel.
      const traffic = /\[rank 0\] pbrl: ddp traffic [^:]*: (.*)/.exec(ddp.err)?.[1] ?? "";
      expect(traffic).toMatch(/\bload: \d+ exchanges, [1-9][\d.]* MB out/);
      expect(traffic).toMatch(/\bsnapshot: \d+ exchanges, [\d.]+ MB out, [1-9][\d.]* MB back/);
      // Only rank 0 writes; the files that record the config differ in parallel_training and output_dir alone.
      const files = (
        readdirSync(path.join(dir, "single"), { recursive: true, withFileTypes: true }) as { isFile(): boolean; parentPath: string; name: string }[]
      )
        .filter((f) => f.isFile())
        .map((f) => path.relative(path.join(dir, "single"), path.join(f.parentPath, f.name)))
        .sort();
      expect(files.filter((f) => f.startsWith("agents/")).length).toBeGreaterThan(0);
      expect(files.filter((f) => f.startsWith("preference_replay/")).length).toBeGreaterThan(0);
      for (const f of files) {
        if (f === "metrics.jsonl" || f === ".pbrl-run.json") continue; // timestamps and timings
        const a = readFileSync(path.join(dir, "single", f));
        const b = readFileSync(path.join(dir, "ddp", f));
        if (/(^config\.json|manifest\.json|state\.json)$/.test(f)) {
          const strip = (x: Buffer) =>
            x
              .toString("utf8")
              .replace(/"parallel_training":\s*"(none|ddp)"/g, "")
              .replace(/"output_dir":\s*"[^"]*"/g, "")
              .replace(/"bytes":\s*\d+,\s*"sha256":\s*"[0-9a-f]+"/g, "");
          expect(strip(b), f).toBe(strip(a));
        } else expect(b.equals(a), f).toBe(true);
      }
    },
    240_000,
  );

  it.skipIf(noGroups !== undefined)(
    "a ddp rank killed by SIGKILL mid-run: the launch exits 1 naming it, and a resume gives the uninterrupted run's agents byte for byte",
    async () => {
      const { dir, args } = tinyTeamRun("pbrl-ddp-kill-", "madpo_iter", ["The cat", "We drink", "A bird"], ["num_iterations=3"]);
      const one = { OMP_NUM_THREADS: "1", PBRL_NATIVE_THREADS: "1" };
      // The uninterrupted run, in one process (which ddp matches byte for byte, above).
      const whole = await launch([...args, `output_dir=${path.join(dir, "whole")}`], one);
      expect(whole.code, whole.err).toBe(0);
      const ddp = ["--nproc_per_node", "2", ...args, "parallel_training=ddp", `output_dir=${path.join(dir, "cut")}`];
      let killed = false;
      const cut = await launch(ddp, one, (err) => {
        const pid = /\[rank 1\] pbrl: rank 1 of 2 \(pid (\d+)\)/.exec(err)?.[1];
        // Once round 2's pairs are in, rank 1 dies while its agent trains (or round 3 collects).
        if (!killed && pid !== undefined && /\[rank 0\] pbrl: round 2: /.test(err)) {
          killed = true;
          process.kill(Number(pid), "SIGKILL");
        }
      });
      expect(killed).toBe(true);
      expect(cut.code, cut.err).toBe(1);
      expect(cut.err).toMatch(/pbrl train: rank 1 \(local rank 1 on host \S+\) was killed by SIGKILL; the other ranks were stopped/);
      const stoppedAt = (JSON.parse(readFileSync(path.join(dir, "cut", "checkpoints", "latest.json"), "utf8")) as { round: number }).round;
      expect(stoppedAt).toBeLessThan(3);
      const resumed = await launch([...ddp, "resume_from_checkpoint=true"], one);
      expect(resumed.code, resumed.err).toBe(0);
      const agentFiles = (readdirSync(path.join(dir, "whole", "agents"), { recursive: true }) as string[]).filter((f) => /\.(safetensors|json)$/.test(f));
      expect(agentFiles).toContain(path.join("agent_1", "model.safetensors"));
      for (const f of agentFiles)
        expect(readFileSync(path.join(dir, "cut", "agents", f)).equals(readFileSync(path.join(dir, "whole", "agents", f))), f).toBe(true);
    },
    240_000,
  );

  it.skipIf(noGroups !== undefined).each([
    { trainer: "madpo_iter", step: "step", runs: [4, 2, 4] },
    { trainer: "marlhf_iter", step: "policyStep", runs: [4] },
  ])(
    "parallel_training=ddp, $trainer, 4 ranks, 2 agents (data-parallel pairs): within 1e-5 of the single process, on worlds of $runs ranks (resumed between)",
    async ({ trainer, step, runs }) => {
      // A learning rate large enough that training moves the weights far beyond the tolerance.
      const { dir, args } = tinyTeamRun("pbrl-ddp-dp-", trainer, ["The cat", "We drink", "A bird", "Sun and"], ["agent_learning_rate=1e-4"]);
      const one = { OMP_NUM_THREADS: "1", PBRL_NATIVE_THREADS: "1" };
      const single = await launch([...args, `num_iterations=${runs.length}`, `output_dir=${path.join(dir, "single")}`], one);
      expect(single.code, single.err).toBe(0);
      // Round r on runs[r - 1] ranks, each launch resuming the previous one's checkpoint.
      for (const [r, ranks] of runs.entries()) {
        const run = await launch(
          [
            "--nproc_per_node",
            String(ranks),
            ...args,
            `num_iterations=${r + 1}`,
            "parallel_training=ddp",
            `output_dir=${path.join(dir, "dp")}`,
            ...(r > 0 ? ["resume_from_checkpoint=true"] : []),
          ],
          one,
        );
        expect(run.code, run.err).toBe(0);
        if (ranks === 4) {
          expect(run.err).toMatch(/\[rank 0\] pbrl: parallel_training="ddp": 2 agents on 4 ranks \(agent a on ranks a, a \+ 2, …: data-parallel replicas\)/);
          expect(run.err).toMatch(/\[rank 3\] pbrl: rank 3 of 4 \(pid \d+\): hosting agent 1/);
          expect(run.err).toMatch(/\[rank 0\] pbrl: agent workers' devices: agent 0 cpu, cpu; agent 1 cpu, cpu\n/);
          // The replicas on ranks 2 and 3 took their share of every optimizer step.
          for (const rank of [2, 3]) expect(run.err).toMatch(new RegExp(`\\[rank ${rank}\\] pbrl: rank ${rank} of 4: done; served .*\\b[1-9]\\d* ${step}\\b`));
        }
      }
      let worst = 0;
      for (const agent of ["agent_0", "agent_1"]) {
        const a = await readSafetensors(path.join(dir, "single", "agents", agent, "model.safetensors"));
        const b = await readSafetensors(path.join(dir, "dp", "agents", agent, "model.safetensors"));
        expect([...b.tensors.keys()].sort()).toEqual([...a.tensors.keys()].sort());
        for (const [name, t] of a.tensors) {
          const x = t.tensor.data;
          const y = b.tensors.get(name)!.tensor.data;
          for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(Number(x[i]) - Number(y[i])));
        }
      }
      // Training moved the weights: the comparison is not between two untouched copies of the checkpoint.
      const start = await readSafetensors(path.join(TINY_LLAMA, "model.safetensors"));
      const trained = await readSafetensors(path.join(dir, "dp", "agents", "agent_0", "model.safetensors"));
      let moved = 0;
      for (const [name, t] of start.tensors) {
        const y = trained.tensors.get(name)?.tensor.data;
        if (y !== undefined) for (let i = 0; i < t.tensor.data.length; i++) moved = Math.max(moved, Math.abs(Number(t.tensor.data[i]) - Number(y[i])));
      }
      process.stderr.write(
        `ddp ${trainer} on ${runs.join(", ")} ranks: max |Δw| vs one process ${worst.toExponential(2)} (training moved weights by up to ${moved.toExponential(2)})\n`,
      );
      expect(moved).toBeGreaterThan(2e-4);
      expect(worst).toBeLessThanOrEqual(1e-5);
    },
    360_000,
  );
  // On a CUDA libtorch (scripts/gpu/check.sh names its GPUs in PBRL_TEST_DEVICES): with
  // agent_devices unset, each rank puts its agents on its own GPU, cuda:LOCAL_RANK, as torchrun's
  // users place them; a host with fewer GPUs than ranks is refused up front, saying why.
  const gpus = (process.env["PBRL_TEST_DEVICES"] ?? "").split(",").filter((d) => d.startsWith("cuda")).length;
  it.runIf(gpus > 0 && noGroups === undefined)(
    "parallel_training=ddp on backend=libtorch with GPUs: agent_devices unset is cuda:LOCAL_RANK on every rank",
    async () => {
      const { dir, args } = tinyTeamRun("pbrl-ddp-cuda-", "madpo_iter", ["The cat", "We drink", "A bird"], ["num_iterations=1", "backend=libtorch"]);
      const r = await launch(["--nproc_per_node", "2", ...args, "parallel_training=ddp", `output_dir=${path.join(dir, "out")}`], {});
      if (gpus >= 2) {
        expect(r.code, r.err).toBe(0);
        expect(r.err).toMatch(/\[rank 0\] pbrl: agent workers' devices: agent 0 cuda:0; agent 1 cuda:1\n/);
      } else {
        expect(r.code, r.err).toBe(2);
        expect(r.err).toMatch(/agent_devices: parallel_training="ddp": local rank 1 has no GPU of its own \(this host's libtorch sees 1\)/);
        expect(existsSync(path.join(dir, "out")), "checked before the run folder is made").toBe(false);
      }
    },
    240_000,
  );
});
