// The plan `pbrl train --nproc_per_node N` follows, computed by hand: torchrun's variables per
// rank, the cores shared out, the environment filling what the flags leave, and clear errors.
import { describe, expect, it } from "vitest";
import { launchPlan, rankArgv } from "../src/launch/launch-plan.js";

describe("launchPlan", () => {
  it("one host: loopback, the free port, ranks 0..N-1, cores shared", () => {
    const p = launchPlan({ nproc_per_node: "2" }, {}, 5, 41234);
    expect([p.standalone, p.masterAddr, p.masterPort, p.worldSize]).toEqual([true, "127.0.0.1", 41234, 2]);
    expect(p.ranks.map((r) => r.env)).toEqual(
      [0, 1].map((i) => ({
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: "41234",
        RANK: String(i),
        WORLD_SIZE: "2",
        LOCAL_RANK: String(i),
        LOCAL_WORLD_SIZE: "2",
        GROUP_RANK: "0",
        OMP_NUM_THREADS: "2", // floor(5 / 2)
        PBRL_NATIVE_THREADS: "2",
      })),
    );
    // more ranks than cores: still one thread each
    expect(launchPlan({ nproc_per_node: "4" }, {}, 2, 1).ranks[3]!.env["OMP_NUM_THREADS"]).toBe("1");
  });

  it("the user's OMP_NUM_THREADS wins, and sets pbrl's pool too unless PBRL_NATIVE_THREADS is set", () => {
    expect(launchPlan({ nproc_per_node: "2" }, { OMP_NUM_THREADS: "3" }, 8, 1).ranks[0]!.env).toMatchObject({ OMP_NUM_THREADS: "3", PBRL_NATIVE_THREADS: "3" });
    expect(launchPlan({ nproc_per_node: "2" }, { PBRL_NATIVE_THREADS: "1" }, 8, 1).ranks[0]!.env).toMatchObject({
      OMP_NUM_THREADS: "4",
      PBRL_NATIVE_THREADS: "1",
    });
  });

  it("several hosts: global ranks node_rank·N + local rank; master from flags or env; torchrun's port", () => {
    const p = launchPlan({ nproc_per_node: "2", nnodes: "3", node_rank: "2", master_addr: "n0" }, {}, 4, 1);
    expect([p.standalone, p.masterAddr, p.masterPort, p.worldSize]).toEqual([false, "n0", 29500, 6]);
    expect(p.ranks.map((r) => [r.rank, r.localRank, r.env["GROUP_RANK"]])).toEqual([
      [4, 0, "2"],
      [5, 1, "2"],
    ]);
    // srun's variables and a Job's MASTER_ADDR/MASTER_PORT fill what the flags leave
    const s = launchPlan({ nproc_per_node: "1" }, { SLURM_NNODES: "2", SLURM_NODEID: "1", MASTER_ADDR: "head", MASTER_PORT: "6000" }, 4, 1);
    expect([s.nnodes, s.nodeRank, s.masterAddr, s.masterPort, s.ranks[0]!.rank]).toEqual([2, 1, "head", 6000, 1]);
  });

  it("errors say what is wrong and what to pass", () => {
    expect(() => launchPlan({ nproc_per_node: "0" }, {}, 2, 1)).toThrow(/--nproc_per_node must be an integer ≥ 1, got "0"/);
    expect(() => launchPlan({ nproc_per_node: "2", nnodes: "2" }, {}, 2, 1)).toThrow(/--nnodes 2 needs --master_addr \(or MASTER_ADDR\)/);
    expect(() => launchPlan({ nproc_per_node: "2", nnodes: "2", node_rank: "2", master_addr: "a" }, {}, 2, 1)).toThrow(/--node_rank 2 is not below --nnodes 2/);
    expect(() => launchPlan({ nproc_per_node: "1", master_port: "70000" }, {}, 2, 1)).toThrow(/--master_port must be a TCP port/);
    expect(() => launchPlan({ nproc_per_node: "1" }, { RANK: "0", WORLD_SIZE: "2", LOCAL_RANK: "0" }, 2, 1)).toThrow(
      /already is rank 0 of 2 .*drop --nproc_per_node/,
    );
  });

  it("rankArgv drops the launcher's flags, in both spellings, and keeps the rest", () => {
    expect(rankArgv(["--config", "r.yaml", "--nproc_per_node", "2", "--master_port=7", "seed=1", "--nnodes=1"])).toEqual(["--config", "r.yaml", "seed=1"]);
  });
});
