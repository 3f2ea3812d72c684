import { DeviceUnavailableError } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { hostRankDevices, rankDevice, rankDevices } from "../src/parallel/rank-devices.js";

describe("rankDevice: an agent's device on a ddp rank", () => {
  it("keeps a named device on every rank, and leaves 'auto' to the backend where no GPU is seen", () => {
    expect(rankDevice("cpu", 3, 2)).toBe("cpu");
    expect(rankDevice("cuda:1", 0, 2)).toBe("cuda:1");
    expect(rankDevice("auto", 5, 0)).toBe("auto");
  });

  it("places 'auto' on the rank's own GPU, cuda:LOCAL_RANK, and refuses a local rank without one", () => {
    expect(rankDevice("auto", 0, 2)).toBe("cuda:0");
    expect(rankDevice("auto", 1, 2)).toBe("cuda:1");
    expect(() => rankDevice("auto", 2, 2)).toThrow(DeviceUnavailableError);
    expect(() => rankDevice("auto", 1, 1)).toThrow(
      /local rank 1 has no GPU of its own \(this host's libtorch sees 1\): start at most 1 rank per host \(--nproc_per_node\), or set agent_devices/,
    );
  });

  it("resolves agent_devices per agent: unset, one for all, or one per agent", () => {
    expect(rankDevices(null, 2, 1, 4)).toEqual(["cuda:1", "cuda:1"]);
    expect(rankDevices("cpu", 3, 1, 4)).toEqual(["cpu", "cpu", "cpu"]);
    expect(rankDevices(["cpu", "auto"], 2, 0, 1)).toEqual(["cpu", "cuda:0"]);
    expect(rankDevices(null, 2, 3, 0)).toEqual(["auto", "auto"]);
    expect(() => rankDevices(["cpu", "cpu", "cpu"], 2, 0, 0)).toThrow(/agent_devices: has 3 entries; give one device or 2/);
  });

  it("hostRankDevices checks every local rank of the host up front, and gives this rank's", () => {
    expect(hostRankDevices(null, 2, { localRank: 0, localWorldSize: 2 }, 2)).toEqual(["cuda:0", "cuda:0"]);
    expect(() => hostRankDevices(null, 2, { localRank: 0, localWorldSize: 2 }, 1)).toThrow(/local rank 1 has no GPU of its own/);
    // Named devices leave nothing to check: two ranks may share cuda:0, or compute on the CPU.
    expect(hostRankDevices("cuda:0", 2, { localRank: 0, localWorldSize: 4 }, 1)).toEqual(["cuda:0", "cuda:0"]);
    expect(hostRankDevices(null, 2, { localRank: 1, localWorldSize: 4 }, 0)).toEqual(["auto", "auto"]);
  });
});
