import { describe, expect, it } from "vitest";
import { parseMetrics } from "../src/index.js";

const lines = [
  `{"kind":"round","step":0,"iter/current_iteration":1,"iter/comparator_win_rate":null,"time":"2025-01-01T00:00:02.500Z","elapsed_s":2.5}`,
  `{"kind":"eval","step":0,"update":0,"eval/turn_1/reward_mean":0.5}`,
  `{"kind":"train","step":8,"round":1,"epoch":1,"update":1,"loss":0.69,"agent_0/margin":0.1}`,
  `{"kind":"future_kind","step":9,"x":1}`,
];

describe("parseMetrics", () => {
  it("groups records by kind, keeps other kinds apart and logged NaNs as null", () => {
    const m = parseMetrics(lines.join("\n") + "\n");
    expect(m.records).toHaveLength(4);
    expect(m.byKind.round).toHaveLength(1);
    expect(m.byKind.eval).toHaveLength(1);
    expect(m.byKind.train[0]!["loss"]).toBe(0.69);
    expect(m.byKind.round[0]!["iter/comparator_win_rate"]).toBeNull();
    expect(m.other.map((r) => r.kind)).toEqual(["future_kind"]);
    expect(m.partialLastLine).toBe(false);
    expect(m.skipped).toEqual([]);
  });

  it("leaves out a half-written last line and flags it", () => {
    const m = parseMetrics(lines.join("\n") + "\n" + `{"kind":"train","step":16,"rou`);
    expect(m.records).toHaveLength(4);
    expect(m.partialLastLine).toBe(true);
    expect(m.skipped).toEqual([]);
  });

  it("keeps a complete last line that only lacks its newline", () => {
    const m = parseMetrics(lines.join("\n"));
    expect(m.records).toHaveLength(4);
    expect(m.partialLastLine).toBe(false);
  });

  it("lists broken lines in the middle and records without a kind", () => {
    const m = parseMetrics([lines[0], "{not json", `{"step":3}`, "[1,2]", "", lines[1]].join("\n") + "\n");
    expect(m.records).toHaveLength(2);
    expect(m.skipped).toEqual([
      { line: 2, reason: "not valid JSON" },
      { line: 3, reason: `has no "kind"` },
      { line: 4, reason: "not a JSON object" },
    ]);
  });

  it("reads an empty file as no records", () => {
    expect(parseMetrics("").records).toEqual([]);
    expect(parseMetrics("").partialLastLine).toBe(false);
  });
});
