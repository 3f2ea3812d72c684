// Process group settings from torchrun's environment and from the caller (src/distributed/
// torchrun-env.ts): pure functions, so no addon is needed. And, without the libtorch addon,
// forming a group is an error that says how to get it.
import { describe, expect, it } from "vitest";
import {
  checkProcessGroupOptions,
  DEFAULT_DDP_TIMEOUT_SECONDS,
  distributedAvailable,
  DistributedConfigError,
  DistributedUnavailableError,
  initProcessGroup,
  parseTorchrunEnv,
  processGroupFromEnv,
} from "../src/index.js";

const TORCHRUN = { MASTER_ADDR: "10.0.0.5", MASTER_PORT: "29500", RANK: "3", WORLD_SIZE: "4", LOCAL_RANK: "1", LOCAL_WORLD_SIZE: "2" };

/** The problems a DistributedConfigError lists, or a failure when f does not throw one. */
function problems(f: () => unknown): readonly string[] {
  try {
    f();
  } catch (e) {
    if (e instanceof DistributedConfigError) return e.problems;
    throw e;
  }
  throw new Error("expected a DistributedConfigError");
}

describe("parseTorchrunEnv", () => {
  it("reads torchrun's variables", () => {
    expect(parseTorchrunEnv(TORCHRUN)).toEqual({ masterAddr: "10.0.0.5", masterPort: 29500, rank: 3, worldSize: 4, localRank: 1, localWorldSize: 2 });
  });

  it("takes LOCAL_RANK and LOCAL_WORLD_SIZE as RANK and WORLD_SIZE when unset (one host)", () => {
    const { LOCAL_RANK: _r, LOCAL_WORLD_SIZE: _w, ...global } = TORCHRUN;
    expect(parseTorchrunEnv(global)).toMatchObject({ rank: 3, worldSize: 4, localRank: 3, localWorldSize: 4 });
  });

  it("names every missing variable and says how to launch", () => {
    const p = problems(() => parseTorchrunEnv({}));
    expect(p).toEqual([
      "MASTER_ADDR is not set: launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)",
      "MASTER_PORT is not set: launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)",
      "WORLD_SIZE is not set: launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)",
      "RANK is not set: launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)",
    ]);
  });

  it("names every invalid value", () => {
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, RANK: "-1", WORLD_SIZE: "two", MASTER_PORT: "70000" }))).toEqual([
      "MASTER_PORT=70000 is not a port (1 to 65535)",
      'WORLD_SIZE="two" is not a whole number ≥ 1',
      'RANK="-1" is not a whole number ≥ 0',
    ]);
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, RANK: "4" }))).toEqual(["RANK=4 must be below WORLD_SIZE=4 (ranks count from 0)"]);
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, WORLD_SIZE: "0", MASTER_PORT: "0" }))).toEqual([
      "MASTER_PORT=0 must be at least 1",
      "WORLD_SIZE=0 must be at least 1",
    ]);
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, LOCAL_RANK: "2" }))).toEqual(["LOCAL_RANK=2 must be below LOCAL_WORLD_SIZE=2"]);
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, LOCAL_WORLD_SIZE: "8", LOCAL_RANK: "0" }))).toEqual([
      "LOCAL_WORLD_SIZE=8 must not exceed WORLD_SIZE=4",
    ]);
    expect(problems(() => parseTorchrunEnv({ ...TORCHRUN, RANK: "1.5" }))).toEqual(['RANK="1.5" is not a whole number ≥ 0']);
  });

  it("the error message lists the problems, one a line", () => {
    expect(() => parseTorchrunEnv({ ...TORCHRUN, MASTER_ADDR: " " })).toThrow(
      "invalid process group settings:\n  - MASTER_ADDR is not set: launch with torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for every rank)",
    );
  });
});

describe("checkProcessGroupOptions", () => {
  it("fills in transformers' ddp_timeout default, Gloo and CUDA device 0", () => {
    expect(DEFAULT_DDP_TIMEOUT_SECONDS).toBe(1800);
    expect(checkProcessGroupOptions({ rank: 0, worldSize: 1, masterAddr: " localhost ", masterPort: 0 })).toEqual({
      rank: 0,
      worldSize: 1,
      masterAddr: "localhost",
      masterPort: 0,
      timeoutSeconds: 1800,
      backend: "gloo",
      cudaDevice: 0,
    });
  });

  it("names every invalid field", () => {
    expect(problems(() => checkProcessGroupOptions({ rank: 2, worldSize: 2, masterAddr: "", masterPort: 65536, timeoutSeconds: 0 }))).toEqual([
      "rank 2 must be below worldSize 2 (ranks count from 0)",
      "masterAddr is empty: give the host name or address of rank 0",
      "masterPort 65536 is not a port (0 to 65535; 0: rank 0 picks a free one)",
      "timeoutSeconds 0 must be above 0 (and at most a year)",
    ]);
    expect(problems(() => checkProcessGroupOptions({ rank: 1, worldSize: 2, masterAddr: "h", masterPort: 0 }))).toEqual([
      "masterPort 0 only lets rank 0 pick a port; the other ranks need the port it picked",
    ]);
    expect(problems(() => checkProcessGroupOptions({ rank: 0.5, worldSize: 0, masterAddr: "h", masterPort: 1 }))).toEqual([
      "worldSize 0 must be a whole number ≥ 1",
      "rank 0.5 must be a whole number ≥ 0",
    ]);
    const wrongBackend = { rank: 0, worldSize: 1, masterAddr: "h", masterPort: 1, backend: "mpi" as "gloo", cudaDevice: -1 };
    expect(problems(() => checkProcessGroupOptions(wrongBackend))).toEqual([
      'backend "mpi" is not a process group backend (gloo or nccl)',
      "cudaDevice -1 must be a whole number ≥ 0 (a CUDA device index)",
    ]);
  });

  it("initProcessGroup and processGroupFromEnv refuse bad settings before touching the network", async () => {
    await expect(initProcessGroup({ rank: 3, worldSize: 2, masterAddr: "h", masterPort: 1 })).rejects.toBeInstanceOf(DistributedConfigError);
    await expect(processGroupFromEnv({ env: {} })).rejects.toBeInstanceOf(DistributedConfigError);
  });
});

describe("without the libtorch addon", () => {
  it("forming a group says libtorch is needed and how to get it", async () => {
    const saved = process.env["PBRL_LIBTORCH"];
    process.env["PBRL_LIBTORCH"] = "off";
    try {
      const a = distributedAvailable();
      expect(a.ok).toBe(false);
      expect(a.ok ? "" : a.reason).toMatch(/run on PyTorch's c10d inside pbrl's libtorch addon, which is disabled by PBRL_LIBTORCH=off/);
      const err = await initProcessGroup({ rank: 0, worldSize: 1, masterAddr: "127.0.0.1", masterPort: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DistributedUnavailableError);
    } finally {
      if (saved === undefined) delete process.env["PBRL_LIBTORCH"];
      else process.env["PBRL_LIBTORCH"] = saved;
    }
  });

  it("a missing addon's message says how to build it", async () => {
    const saved = process.env["PBRL_LIBTORCH_ADDON"];
    process.env["PBRL_LIBTORCH_ADDON"] = "/nonexistent/pbrl_libtorch.node";
    try {
      const a = distributedAvailable();
      expect(a.ok ? "" : a.reason).toMatch(
        /libtorch addon not built \(\/nonexistent\/pbrl_libtorch.node does not exist\)\): it needs libtorch .*pip install torch.*build:addons/,
      );
    } finally {
      if (saved === undefined) delete process.env["PBRL_LIBTORCH_ADDON"];
      else process.env["PBRL_LIBTORCH_ADDON"] = saved;
    }
  });
});
