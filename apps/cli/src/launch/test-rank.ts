/**
 * Test-only ranks: with PBRL_TEST_RANK set, `pbrl train` does no training but behaves as a rank
 * the launcher's tests can check through real processes — it prints its launch environment, forms
 * a c10d group and all-reduces, fails, dies by SIGKILL, or waits for a signal. Nothing else reads
 * this variable; users never set it.
 */
import { deviceOf, onDevice, parseBackendName, processGroupFromEnv, tf, useBackend } from "@pbrl/core-tensor";
import { EXIT } from "../exit-codes.js";
import type { CliIO } from "../io.js";

export const TEST_RANK_VAR = "PBRL_TEST_RANK";

const ENV_KEYS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "PBRL_NATIVE_THREADS"];

/** Waits for SIGINT/SIGTERM and ends as a stopped run does (exit 130). */
function waitForSignal(io: CliIO): Promise<number> {
  io.err("waiting for a signal\n");
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    const on = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      // Written straight to the pipe and waited for: the CLI exits as soon as this resolves.
      process.stderr.write(`stopped by ${signal}\n`, () => resolve(EXIT.stopped));
    };
    process.once("SIGINT", on);
    process.once("SIGTERM", on);
  });
}

/** Runs the test rank named by PBRL_TEST_RANK (env, allreduce, allreduce-device, fail, sigkill, wait) with the launcher's argv. */
export async function testRank(mode: string, argv: string[], io: CliIO): Promise<number> {
  const env = process.env;
  const rank = Number(env["RANK"]);
  const last = rank === Number(env["WORLD_SIZE"]) - 1;
  switch (mode) {
    case "env":
      io.out(`${JSON.stringify({ ...Object.fromEntries(ENV_KEYS.map((k) => [k, env[k]])), argv })}\n`);
      return EXIT.ok;
    case "allreduce": {
      await useBackend(parseBackendName(env["PBRL_BACKEND"] ?? "wasm"));
      const group = await processGroupFromEnv({ timeoutSeconds: 30 });
      const [sum] = await group.allReduce([tf.tensor1d([rank + 1])]);
      io.out(`allreduce ${String((await sum!.data())[0])}\n`);
      sum!.dispose();
      group.destroy();
      return EXIT.ok;
    }
    case "allreduce-device": {
      // scripts/gpu/check.sh: NCCL between GPUs (PBRL_TEST_DIST_BACKEND=nccl, cuda:LOCAL_RANK), or
      // Gloo with tensors on PBRL_TEST_DEVICE (cuda:0 on one GPU, cpu in a rehearsal).
      await useBackend("libtorch");
      const nccl = env["PBRL_TEST_DIST_BACKEND"] === "nccl";
      const device = nccl ? `cuda:${env["LOCAL_RANK"] ?? "0"}` : (env["PBRL_TEST_DEVICE"] ?? "cpu");
      const group = await processGroupFromEnv({ timeoutSeconds: 120, ...(nccl ? { backend: "nccl" as const } : {}) });
      const x = onDevice(device, () => tf.tensor1d([rank + 1, 10 * (rank + 1)]));
      const [sum] = await group.allReduce([x]);
      io.out(`allreduce ${Array.from(await sum!.data()).join(",")} on ${deviceOf(sum!)} via ${nccl ? "nccl" : "gloo"}\n`);
      tf.dispose([x, sum!]);
      group.destroy();
      return EXIT.ok;
    }
    case "fail":
      if (!last) return waitForSignal(io);
      io.err("failing on purpose\n");
      return 3;
    case "sigkill":
      if (!last) return waitForSignal(io);
      process.kill(process.pid, "SIGKILL");
      return EXIT.failed;
    case "wait":
      return waitForSignal(io);
    default:
      throw new Error(`${TEST_RANK_VAR}=${mode}: expected env, allreduce, allreduce-device, fail, sigkill or wait`);
  }
}
