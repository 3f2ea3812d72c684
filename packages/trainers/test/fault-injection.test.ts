// An iterative run killed with SIGKILL at random points — at random times, and while a checkpoint,
// a round file or the final agents are being written — and resumed after each kill, ends with
// every file byte-identical to the same run left alone. The points come from a seeded generator;
// the seed is printed, and PBRL_FAULT_SEED replays a failing sequence.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RUN_OUTPUTS } from "../src/run-dir.js";
import { runChild, startChild } from "./child/run-child.js";
import { untimedMetrics } from "./untimed-metrics.js";

const KILLS = 10;
// Long enough that ten kills, each after at most about one round of progress, land before the end.
const ENV = { PBRL_TEST_ROUNDS: "20" };

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * sha256 of every file. Two differences are allowed: config.json's output_dir (the folder's own
 * path) and the wall-clock fields of metrics.jsonl's records.
 */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const f = path.join(dir, rel);
    if (statSync(f).isDirectory()) out[rel] = "dir";
    else if (rel === "metrics.jsonl") out[rel] = JSON.stringify(untimedMetrics(f));
    else
      out[rel] = createHash("sha256")
        .update(rel === "config.json" ? readFileSync(f, "utf8").replace(JSON.stringify(dir), '"<output_dir>"') : readFileSync(f))
        .digest("hex");
  }
  return out;
}

// An atomic write in progress shows as core-tensor's temporary sibling of its target.
const writing = (dir: string) => {
  try {
    return readdirSync(dir).some((n) => /^\..+\.tmp-\d+-[0-9a-f]{8}$/.test(n));
  } catch {
    return false;
  }
};

type KillPoint = { kind: "time"; afterMs: number } | { kind: "write"; where: string; nth: number };

/** The first three points cover each kind of place; the rest are drawn among them. */
function pickPoint(rand: () => number, i: number): KillPoint {
  const r = i === 0 ? 0.5 : i === 1 ? 0.7 : i === 2 ? 0 : rand();
  if (r < 0.4) return { kind: "time", afterMs: Math.round(rand() * 800) };
  const where = r < 0.65 ? "checkpoints" : r < 0.85 ? "preference_replay" : "reward_distributions";
  return { kind: "write", where, nth: 1 + Math.floor(rand() * 2) };
}

/** Starts the run (resuming when it left anything), kills it at `point`; resolves with what happened. */
async function killAt(out: string, point: KillPoint): Promise<string> {
  const resume = RUN_OUTPUTS.some((n) => existsSync(path.join(out, n)));
  const run = startChild("madpo_iter", out, resume, ENV);
  let timer: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  const kill = () => run.child.exitCode === null && run.child.kill("SIGKILL");
  // counted from the run's first log line: the process has started and loaded the model
  if (point.kind === "time") run.onOutput((stdout) => stdout.includes("PBRL ") && (timer ??= setTimeout(kill, point.afterMs)));
  else {
    let seen = 0;
    let inWrite = false;
    poll = setInterval(() => {
      const now = writing(path.join(out, point.where));
      if (now && !inWrite && ++seen === point.nth) kill();
      inWrite = now;
    }, 2);
  }
  const r = await run.exited;
  clearTimeout(timer);
  clearInterval(poll);
  if (r.signal === "SIGKILL") return `killed (${point.kind === "time" ? `${point.afterMs} ms` : `writing ${point.where} #${point.nth}`})`;
  if (r.code !== 0) throw new Error(`the run failed instead of resuming (${r.code}):\n${r.stdout}\n${r.stderr}`);
  return `finished before the kill point (${point.kind === "time" ? `${point.afterMs} ms` : `writing ${point.where} #${point.nth}`}): ${r.stdout
    .split("\n")
    .filter((l) => l.startsWith("PBRL "))
    .slice(-3)
    .join(" | ")}`;
}

describe("fault injection", () => {
  it(`${KILLS} SIGKILLs at random points, each followed by a resume, end byte-identical to the run left alone`, async () => {
    const seed = Number(process.env["PBRL_FAULT_SEED"] ?? Math.floor(Math.random() * 1e9));
    console.log(`fault-injection seed ${seed} (PBRL_FAULT_SEED=${seed} replays it)`);
    const rand = mulberry32(seed);
    const base = mkdtempSync(path.join(tmpdir(), "pbrl-faults-"));
    const straight = path.join(base, "straight");
    const killed = path.join(base, "killed");
    const alone = runChild("madpo_iter", straight, false, ENV);
    const log: string[] = [];
    let kills = 0;
    let finished = 0;
    while (kills < KILLS) {
      const point = pickPoint(rand, log.length);
      const what = await killAt(killed, point);
      log.push(what);
      if (what.startsWith("killed")) kills++;
      else if (++finished > 3) break; // the points keep landing after the end: stop here rather than loop
    }
    await runChild(
      "madpo_iter",
      killed,
      RUN_OUTPUTS.some((n) => existsSync(path.join(killed, n))),
      ENV,
    );
    await alone;
    console.log(log.join("\n"));
    expect(kills, log.join("\n")).toBeGreaterThanOrEqual(KILLS);
    expect(
      log.some((l) => /writing checkpoints/.test(l)),
      log.join("\n"),
    ).toBe(true);
    expect(tree(killed)).toEqual(tree(straight));
  }, 900_000);
});
