/**
 * Runs this host's ranks of a `pbrl train --nproc_per_node N` launch and watches them, as
 * torchrun does: each rank is a child process running the same `pbrl train` command; every line
 * it prints is prefixed with `[rank R] ` (torchrun's --tee / -r), so no rank's error is lost. A rank
 * that fails stops the others (SIGTERM, then SIGKILL after a grace period); SIGINT/SIGTERM on the
 * launcher go to every rank once, and the launcher exits as a single run would.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { hostname } from "node:os";
import type { CliIO } from "../io.js";
import { EXIT } from "../exit-codes.js";
import type { LaunchPlan, RankSpec } from "./launch-plan.js";

/** Seconds a rank gets to finish after SIGTERM before SIGKILL (the trainers finish a round's checkpoint on SIGTERM, which may take longer: a second Ctrl-C kills at once). */
export const STOP_GRACE_MS = 30_000;

/** A free TCP port on loopback for a single host's rendezvous (torchrun --standalone). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** How a rank ended: why the launcher exits non-zero, in words. */
export function rankFailure(rank: number, localRank: number, host: string, code: number | null, signal: NodeJS.Signals | null): string {
  const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
  return `rank ${rank} (local rank ${localRank} on host ${host}) ${how}`;
}

/** Writes a stream's text line by line, each line behind `prefix` (a last partial line waits for its end). */
function prefixedLines(prefix: string, write: (text: string) => void): { push: (chunk: Buffer) => void; flush: () => void } {
  let pending = "";
  return {
    push: (chunk) => {
      pending += chunk.toString("utf8");
      const end = pending.lastIndexOf("\n");
      if (end < 0) return;
      write(
        pending
          .slice(0, end + 1)
          .split(/(?<=\n)/)
          .map((l) => prefix + l)
          .join(""),
      );
      pending = pending.slice(end + 1);
    },
    flush: () => {
      if (pending !== "") write(`${prefix}${pending}\n`);
      pending = "";
    },
  };
}

export interface LaunchOptions {
  /** The script and arguments each rank runs after node (the CLI's main.js and `train …`). */
  command: string[];
  graceMs?: number;
}

/** Starts the plan's ranks and resolves with the launcher's exit code once every rank has ended. */
export function runRanks(plan: LaunchPlan, options: LaunchOptions, io: CliIO): Promise<number> {
  const host = hostname();
  const graceMs = options.graceMs ?? STOP_GRACE_MS;
  io.err(
    `pbrl: launching ${plan.nprocPerNode} rank${plan.nprocPerNode === 1 ? "" : "s"} on ${host} (node ${plan.nodeRank} of ${plan.nnodes}, world size ${plan.worldSize}, ` +
      `rendezvous ${plan.masterAddr}:${plan.masterPort}, OMP_NUM_THREADS=${plan.ranks[0]?.env["OMP_NUM_THREADS"]} each)\n`,
  );
  return new Promise((resolve) => {
    const live = new Map<number, ChildProcess>();
    let failure: { message: string; code: number } | undefined;
    let stopSignal: NodeJS.Signals | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    // Each rank leads a process group of its own, so a terminal's Ctrl-C reaches the launcher
    // alone and every rank gets the signal once, from here (with its helper processes).
    const signalAll = (signal: NodeJS.Signals) => {
      for (const child of live.values()) {
        try {
          process.kill(-child.pid!, signal);
        } catch {
          // already gone
        }
      }
    };
    const stopAll = () => {
      signalAll("SIGTERM");
      killTimer ??= setTimeout(() => signalAll("SIGKILL"), graceMs);
      killTimer.unref();
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopSignal !== undefined) {
        io.err(`pbrl: ${signal} again: killing every rank\n`);
        signalAll("SIGKILL");
        return;
      }
      stopSignal = signal;
      io.err(`pbrl: ${signal}: passing it to every rank\n`);
      signalAll(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);

    const finish = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      if (killTimer !== undefined) clearTimeout(killTimer);
      if (failure !== undefined) {
        io.err(`pbrl train: ${failure.message}; the other ranks were stopped\n`);
        resolve(failure.code);
      } else resolve(stopSignal !== undefined ? EXIT.stopped : EXIT.ok);
    };

    const start = (spec: RankSpec) => {
      const child = spawn(process.execPath, options.command, { env: { ...process.env, ...spec.env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
      live.set(spec.rank, child);
      const out = prefixedLines(`[rank ${spec.rank}] `, (t) => io.out(t));
      const err = prefixedLines(`[rank ${spec.rank}] `, (t) => io.err(t));
      child.stdout!.on("data", out.push);
      child.stderr!.on("data", err.push);
      child.on("error", (e) => {
        failure ??= { message: `rank ${spec.rank} could not start (${e.message})`, code: EXIT.failed };
        stopAll();
      });
      child.on("close", (code, signal) => {
        out.flush();
        err.flush();
        live.delete(spec.rank);
        const failed = signal !== null || code !== 0;
        // A rank stopped by the launcher's own signal ends as a single run would: not a fault.
        if (failed && failure === undefined && !(stopSignal !== undefined && (code === EXIT.stopped || signal === stopSignal))) {
          // A configuration every rank shares is bad input (exit 2) for the launch too.
          failure = { message: rankFailure(spec.rank, spec.localRank, host, code, signal), code: code === EXIT.badInput ? EXIT.badInput : EXIT.failed };
          stopAll();
        }
        if (live.size === 0) finish();
      });
    };
    for (const spec of plan.ranks) start(spec);
  });
}
