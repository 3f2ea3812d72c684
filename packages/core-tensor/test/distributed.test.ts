// Process groups on c10d (libtorch/src/distributed.cc, src/distributed/) between real processes on
// loopback: this test's process is one rank (through the TypeScript API) and the others are child
// processes — pbrl ranks (fixtures/distributed-rank.mjs, the addon directly) or a Python
// torch.distributed rank. Skips, naming why, when the libtorch addon is not built (and the Python
// test when PBRL_PYTHON is unset); with PBRL_REQUIRE_LIBTORCH=1 either is a failure.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  allReduceInBuckets,
  distributedAvailable,
  distributedBackends,
  initProcessGroup,
  libtorchAddonPath,
  ProcessGroupError,
  tf,
  useBackend,
  currentBackend,
  type ProcessGroup,
} from "../src/index.js";

const required = process.env["PBRL_REQUIRE_LIBTORCH"] === "1";
const available = distributedAvailable();
const missing = available.ok || required ? undefined : available.reason;
const python = process.env["PBRL_PYTHON"] ?? "";
const noPython = python !== "" || required ? undefined : "PBRL_PYTHON (a Python with torch) is not set";

const RANK_SCRIPT = path.resolve(import.meta.dirname, "fixtures/distributed-rank.mjs");

/** The values fixtures/distributed-rank.mjs gives rank r. */
const floats = (r: number): number[] => Array.from({ length: 6 }, (_, i) => (r + 1) * (i + 1));
const ints = (r: number): number[] => Array.from({ length: 4 }, (_, i) => 10 * r + i);
const bools = (r: number): number[] => [1, r % 2, 0];

/** A port nobody listens on now (bound, read and closed by the OS's choice). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Child {
  process: ChildProcess;
  /** The JSON lines it printed, parsed. */
  lines: () => Record<string, unknown>[];
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

const children: ChildProcess[] = [];
const groups: ProcessGroup[] = [];
afterEach(() => {
  for (const g of groups.splice(0)) g.destroy();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

function start(command: string, args: string[], env: Record<string, string>): Child {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  const lines = () =>
    stdout
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { process: child, lines, exited };
}

function pbrlRank(rank: number, worldSize: number, port: number, scenario: string, env: Record<string, string> = {}): Child {
  const torchrun = { MASTER_ADDR: "127.0.0.1", MASTER_PORT: String(port), RANK: String(rank), WORLD_SIZE: String(worldSize) };
  return start(process.execPath, [RANK_SCRIPT, scenario], { ...torchrun, PBRL_LIBTORCH_ADDON: libtorchAddonPath(), ...env });
}

/** Rank 0 of a group of `worldSize` in this process, on a port it picks. */
async function hostRank0(worldSize: number, timeoutSeconds: number, join: (port: number) => void): Promise<ProcessGroup> {
  // Rank 0 binds the store first (port 0: the OS picks a free one), then the others are told it.
  let resolvePort: (p: number) => void = () => undefined;
  const portKnown = new Promise<number>((resolve) => (resolvePort = resolve));
  const pending = initProcessGroup({ rank: 0, worldSize, masterAddr: "127.0.0.1", masterPort: 0, timeoutSeconds, onStoreReady: resolvePort });
  join(await portKnown);
  const group = await pending;
  groups.push(group);
  return group;
}

const values = async (ts: tf.Tensor[]): Promise<number[][]> => {
  const out = await Promise.all(ts.map(async (t) => Array.from(await t.data())));
  tf.dispose(ts);
  return out;
};

describe.skipIf(missing !== undefined)(`process groups on c10d${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  for (const backend of ["wasm", "libtorch"] as const) {
    it(`two pbrl ranks all-reduce, broadcast, all-gather and meet at a barrier (this rank on ${backend})`, async () => {
      const before = currentBackend()?.name ?? "wasm";
      await useBackend(backend);
      try {
        let child: Child | undefined;
        const group = await hostRank0(2, 10, (port) => (child = pbrlRank(1, 2, port, "collectives", { PBRL_TEST_BARRIER_DELAY_MS: "1500" })));
        expect([group.rank, group.worldSize, group.masterPort > 0]).toEqual([0, 2, true]);
        const x = tf.tensor(floats(0), [2, 3]);
        const y = tf.tensor(ints(0), [4], "int32");
        const b = tf.tensor(bools(0), [3], "bool");
        const sum = await group.allReduce([x, y]);
        expect(sum.map((t) => [t.shape, t.dtype])).toEqual([
          [[2, 3], "float32"],
          [[4], "int32"],
        ]);
        expect(await values(sum)).toEqual([floats(0).map((v, i) => v + floats(1)[i]!), ints(0).map((v, i) => v + ints(1)[i]!)]);
        expect(await values(await group.allReduce([x], "avg"))).toEqual([floats(0).map((v, i) => (v + floats(1)[i]!) / 2)]);
        expect(await values(await group.allReduce([x, y], "max"))).toEqual([floats(1), ints(1)]);
        const cast = await group.broadcast([x, y, b], 1);
        expect(cast.map((t) => t.dtype)).toEqual(["float32", "int32", "bool"]);
        expect(await values(cast)).toEqual([floats(1), ints(1), bools(1)]);
        const gathered = await group.allGather(x);
        expect(gathered.map((t) => t.shape)).toEqual([
          [2, 3],
          [2, 3],
        ]);
        expect(await values(gathered)).toEqual([floats(0), floats(1)]);
        // Inputs are never changed.
        expect(Array.from(await x.data())).toEqual(floats(0));
        // The child waits 1.5 s before its barrier; this process's event loop keeps running meanwhile.
        let ticks = 0;
        const timer = setInterval(() => ticks++, 50);
        const t0 = Date.now();
        await group.barrier();
        clearInterval(timer);
        expect(Date.now() - t0).toBeGreaterThan(1000);
        expect(ticks).toBeGreaterThan(10);
        tf.dispose([x, y, b]);
        const done = await child!.exited;
        expect(done.code, done.stderr).toBe(0);
        // The child saw the same results.
        const seen = Object.fromEntries(child!.lines().map((l) => [l["name"], l["results"]]));
        expect(seen["sum"]).toEqual([
          { shape: [2, 3], values: floats(0).map((v, i) => v + floats(1)[i]!) },
          { shape: [4], values: ints(0).map((v, i) => v + ints(1)[i]!) },
        ]);
        expect(seen["broadcast"]).toEqual([
          { shape: [2, 3], values: floats(1) },
          { shape: [4], values: ints(1) },
          { shape: [3], values: bools(1) },
        ]);
        expect(seen["allGather"]).toEqual([
          { shape: [2, 3], values: floats(0) },
          { shape: [2, 3], values: floats(1) },
        ]);
        expect(child!.lines().some((l) => l["name"] === "barrier")).toBe(true);
        group.destroy();
        await expect(group.allReduce([tf.scalar(1)])).rejects.toThrow(/used after destroy\(\)/);
      } finally {
        await useBackend(before);
      }
    }, 20_000);
  }

  it("three ranks: every collective, tensors of several shapes and dtypes in one call", async () => {
    const children3: Child[] = [];
    const group = await hostRank0(3, 10, (port) => {
      for (const r of [1, 2]) children3.push(pbrlRank(r, 3, port, "collectives"));
    });
    // The children run their scenario; this rank follows it with the same calls.
    const x = tf.tensor(floats(0), [2, 3]);
    const y = tf.tensor(ints(0), [4], "int32");
    const sum = await values(await group.allReduce([x, y]));
    expect(sum).toEqual([floats(0).map((v, i) => v + floats(1)[i]! + floats(2)[i]!), ints(0).map((v, i) => v + ints(1)[i]! + ints(2)[i]!)]);
    expect(await values(await group.allReduce([x], "avg"))).toEqual([floats(0).map((v, i) => (v + floats(1)[i]! + floats(2)[i]!) / 3)]);
    tf.dispose(await group.allReduce([x, y], "max"));
    tf.dispose(await group.broadcast([x, y, tf.tensor(bools(0), [3], "bool")], 1));
    expect(await values(await group.allGather(x))).toEqual([floats(0), floats(1), floats(2)]);
    await group.barrier();
    tf.dispose([x, y]);
    for (const c of children3) expect((await c.exited).code).toBe(0);
  }, 20_000);

  it("subgroups beside the default group: ranks 0 and 2 reduce together, rank 1 alone, and the default group still serves all three", async () => {
    const kids: Child[] = [];
    const group = await hostRank0(3, 10, (port) => {
      for (const r of [1, 2]) kids.push(pbrlRank(r, 3, port, "subgroups"));
    });
    const pair = await initProcessGroup({ rank: 0, worldSize: 2, masterAddr: "127.0.0.1", masterPort: group.masterPort, timeoutSeconds: 10, subgroup: "pair" });
    groups.push(pair);
    const x = tf.tensor(floats(0), [2, 3]);
    const both = floats(0).map((v, i) => v + floats(2)[i]!);
    // The child reduces its six values in one call: here a cap of 8 bytes would split them into
    // three calls, which Gloo would pair with the wrong ones; one bucket of 1 MB holds them.
    expect(await values(await allReduceInBuckets(pair, [x], "sum", 1 << 20))).toEqual([both]);
    expect(await values(await group.allReduce([x]))).toEqual([floats(0).map((v, i) => v + floats(1)[i]! + floats(2)[i]!)]);
    x.dispose();
    for (const c of kids) expect((await c.exited).code).toBe(0);
    const seen = kids.map((c) => Object.fromEntries(c.lines().map((l) => [l["name"], l["results"]])));
    expect(seen[0]!["subgroup"]).toEqual([{ shape: [2, 3], values: floats(1) }]);
    expect(seen[1]!["subgroup"]).toEqual([{ shape: [2, 3], values: both }]);
    await expect(initProcessGroup({ rank: 0, worldSize: 2, masterAddr: "127.0.0.1", masterPort: 0, subgroup: "late" })).rejects.toThrow(
      /masterPort 0: a subgroup joins a running store/,
    );
  }, 20_000);

  it("the addon names its backends; NCCL asked of an addon without it is refused, saying what it needs", async () => {
    const backends = distributedBackends();
    expect(backends[0]).toBe("gloo");
    // NCCL is built only against a CUDA libtorch with NCCL's headers (scripts/gpu/check.sh runs it).
    if (!backends.includes("nccl")) {
      const err = await initProcessGroup({ rank: 0, worldSize: 1, masterAddr: "127.0.0.1", masterPort: 0, timeoutSeconds: 3, backend: "nccl" }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ProcessGroupError);
      expect(String(err)).toMatch(/the nccl backend needs an addon built against a CUDA libtorch with its CUDA and NCCL headers .*use backend "gloo"/);
    }
  });

  it("a rank that never joins: forming the group fails within the timeout, naming it", async () => {
    const t0 = Date.now();
    const err = await initProcessGroup({ rank: 0, worldSize: 2, masterAddr: "127.0.0.1", masterPort: 0, timeoutSeconds: 3 }).catch((e: unknown) => e);
    const seconds = (Date.now() - t0) / 1000;
    expect(err).toBeInstanceOf(ProcessGroupError);
    expect(String(err)).toMatch(/rank 0 of 2 .*Rank\(s\) 1 did not join/);
    expect(seconds).toBeGreaterThan(2.5);
    expect(seconds).toBeLessThan(10);
  }, 20_000);

  it("rank 0 never comes: another rank fails within the timeout, saying rank 0 hosts the store", async () => {
    const port = await closedPort();
    const t0 = Date.now();
    const err = await initProcessGroup({ rank: 1, worldSize: 2, masterAddr: "127.0.0.1", masterPort: port, timeoutSeconds: 3 }).catch((e: unknown) => e);
    const seconds = (Date.now() - t0) / 1000;
    expect(seconds).toBeGreaterThan(2.5);
    expect(seconds).toBeLessThan(6);
    expect(err).toBeInstanceOf(ProcessGroupError);
    expect(String(err)).toMatch(new RegExp(`rank 1 of 2.*127\\.0\\.0\\.1:${port}.*Rank 0 hosts the store`));
  }, 20_000);

  it("a rank that dies: the survivor's collective fails within the timeout, naming the rank and its host", async () => {
    let child: Child | undefined;
    const group = await hostRank0(2, 5, (port) => (child = pbrlRank(1, 2, port, "die")));
    expect((await child!.exited).code).toBe(0);
    const t0 = Date.now();
    const x = tf.tensor(floats(0), [2, 3]);
    const err = await group.allReduce([x]).catch((e: unknown) => e);
    x.dispose();
    expect((Date.now() - t0) / 1000).toBeLessThan(8);
    expect(err).toBeInstanceOf(ProcessGroupError);
    expect(String(err)).toMatch(new RegExp(`rank 0 of 2 .*allReduce .*failed.*rank 1 \\(host \\S+ pid ${child!.process.pid}\\)`));
  }, 20_000);

  it("a rank that stalls: the other's collective fails after the timeout, naming the rank", async () => {
    let child: Child | undefined;
    const group = await hostRank0(2, 3, (port) => (child = pbrlRank(1, 2, port, "stall")));
    const t0 = Date.now();
    const x = tf.tensor(floats(0), [2, 3]);
    const err = await group.allReduce([x]).catch((e: unknown) => e);
    const seconds = (Date.now() - t0) / 1000;
    x.dispose();
    expect(seconds).toBeGreaterThan(2.5);
    expect(seconds).toBeLessThan(7);
    expect(err).toBeInstanceOf(ProcessGroupError);
    expect(String(err)).toMatch(new RegExp(`rank 0 of 2 .*No answer from rank 1 \\(host \\S+ pid ${child!.process.pid}\\) within the timeout of 3 s`));
  }, 20_000);

  it.skipIf(noPython !== undefined)(
    `a pbrl rank and a Python torch.distributed rank all-reduce in one group${noPython !== undefined ? ` (skipped: ${noPython})` : ""}`,
    async () => {
      // Rank 1 in Python, rendezvous by torch.distributed's tcp:// method at the store this process hosts.
      const script = [
        "import datetime, json, sys, torch, torch.distributed as dist",
        "dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{sys.argv[1]}', rank=1, world_size=2, timeout=datetime.timedelta(seconds=10))",
        "x = torch.arange(1, 7, dtype=torch.float32).reshape(2, 3) * 2",
        "y = torch.tensor([10, 11, 12, 13], dtype=torch.int32)",
        "dist.all_reduce(x)",
        "dist.all_reduce(y)",
        "out = {'sum_x': x.flatten().tolist(), 'sum_y': y.tolist()}",
        "dist.broadcast(x, src=0)",
        "out['broadcast'] = x.flatten().tolist()",
        "print(json.dumps(out), flush=True)",
        "dist.destroy_process_group()",
      ].join("\n");
      let py: Child | undefined;
      const group = await hostRank0(2, 10, (port) => (py = start(python, ["-c", script, String(port)], {})));
      const x = tf.tensor(floats(0), [2, 3]);
      const y = tf.tensor(ints(0), [4], "int32");
      const [sx] = await group.allReduce([x]);
      const [sy] = await group.allReduce([y]);
      const sumX = floats(0).map((v, i) => v + 2 * (i + 1));
      const sumY = ints(0).map((v, i) => v + 10 + i);
      expect(await values([sx!, sy!])).toEqual([sumX, sumY]);
      const root = tf.tensor([7, 8, 9, 10, 11, 12], [2, 3]);
      tf.dispose(await group.broadcast([root], 0));
      tf.dispose([x, y, root]);
      const done = await py!.exited;
      expect(done.code, done.stderr).toBe(0);
      // Python's side of the same collectives agrees.
      expect(py!.lines()).toEqual([{ sum_x: sumX, sum_y: sumY, broadcast: [7, 8, 9, 10, 11, 12] }]);
    },
    20_000,
  );
});
