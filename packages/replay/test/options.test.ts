import { RngStream } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { OnDiskReplayBuffer, type OnDiskReplayBufferOptions } from "../src/index.js";

const base = { dir: "/tmp/pbrl-replay-options", rng: RngStream.fromSeed(1) };
const build = (o: Partial<OnDiskReplayBufferOptions>) => () => new OnDiskReplayBuffer({ ...base, mode: "current", ...o } as OnDiskReplayBufferOptions);

describe("OnDiskReplayBuffer options", () => {
  it("accepts coherent options for every mode", () => {
    expect(build({ mode: "current" })).not.toThrow();
    expect(build({ mode: "current", k: 1, lambda: null, sampleSize: null })).not.toThrow();
    expect(build({ mode: "nearest_k", k: 3, sampleSize: 64 })).not.toThrow();
    expect(build({ mode: "all_history" })).not.toThrow();
    expect(build({ mode: "lambda_decay", lambda: 0 })).not.toThrow();
    expect(build({ mode: "lambda_decay", lambda: 1, sampleSize: 1 })).not.toThrow();
  });

  it.each<[string, Partial<OnDiskReplayBufferOptions>, RegExp]>([
    ["an unknown mode", { mode: "latest" as never }, /unknown replay mode "latest"; expected one of current, nearest_k, all_history, lambda_decay/],
    ["current with k = 2", { mode: "current", k: 2 }, /k must be unset or 1, got 2/],
    ["current with a sample size", { mode: "current", sampleSize: 0 }, /sampleSize is only valid with nearest_k, all_history or lambda_decay/],
    ["current with λ", { mode: "current", lambda: 0.5 }, /lambda is only valid with lambda_decay/],
    ["nearest_k without k", { mode: "nearest_k" }, /k must be an integer ≥ 1, got undefined/],
    ["nearest_k with k = 0", { mode: "nearest_k", k: 0 }, /k must be an integer ≥ 1, got 0/],
    ["nearest_k with k = 1.5", { mode: "nearest_k", k: 1.5 }, /k must be an integer ≥ 1, got 1.5/],
    ["all_history with k", { mode: "all_history", k: 2 }, /k is only valid with nearest_k/],
    ["all_history with λ", { mode: "all_history", lambda: 0.5 }, /lambda is only valid with lambda_decay/],
    ["lambda_decay without λ", { mode: "lambda_decay" }, /lambda must be a number in \[0, 1\], got undefined/],
    ["lambda_decay with λ = NaN", { mode: "lambda_decay", lambda: Number.NaN }, /lambda must be a number in \[0, 1\], got NaN/],
    ["lambda_decay with λ = 1.5", { mode: "lambda_decay", lambda: 1.5 }, /got 1.5/],
    ["lambda_decay with λ = -0.1", { mode: "lambda_decay", lambda: -0.1 }, /got -0.1/],
    ["lambda_decay with k", { mode: "lambda_decay", lambda: 0.5, k: 2 }, /k is only valid with nearest_k/],
    ["a sample size of 0", { mode: "all_history", sampleSize: 0 }, /sampleSize must be an integer ≥ 1 or unset, got 0/],
    ["a fractional sample size", { mode: "all_history", sampleSize: 2.5 }, /sampleSize must be an integer ≥ 1 or unset, got 2.5/],
    ["an empty dir", { mode: "all_history", dir: "" }, /dir must be a non-empty path/],
    ["no rng", { mode: "all_history", rng: undefined as never }, /rng must be an RngStream/],
  ])("rejects %s", (_name, o, message) => {
    expect(build(o)).toThrow(message);
  });
});
