// Seeds above 2^53 − 1 are refused as such: JavaScript holds them only approximately (2^53 and
// 2^53 + 1 are one number), and YAML, JSON and key=value overrides have rounded them already.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { runCli } from "./capture.js";

const ABOVE = "is above 2^53 − 1 (9007199254740991), the largest integer JavaScript holds exactly";
const AS_READ = "(a larger one is rounded when it is read, so this is the value as read); use a smaller seed";

function file(name: string, text: string): string {
  const f = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-seed-")), name);
  writeFileSync(f, text);
  return f;
}

describe("a seed above 2^53 − 1", () => {
  it.each([
    ["a YAML file (2^64 − 1 arrives as a float)", () => [file("run.yaml", "seed: 18446744073709551615\n")], "18446744073709552000"],
    ["a JSON file", () => [file("run.json", '{"seed": 9007199254740993}')], "9007199254740992"],
    ["a key=value override", () => ["seed=9007199254740993"], "9007199254740992"],
    ["an exponent", () => ["seed=1e20"], "100000000000000000000"],
  ])("from %s: the config says so, with the value as read", async (_from, args, asRead) => {
    for (const trainer of ["madpo", "madpo_iter", "marlhf", "marlhf_iter"]) {
      const r = await runCli(["config", "validate", trainer, ...args()]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`  - seed: ${asRead} ${ABOVE} ${AS_READ}\n`);
    }
  });

  it("2^53 − 1 itself is a valid seed", async () => {
    const r = await runCli(["config", "validate", "madpo", "seed=9007199254740991"]);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ seed: 9007199254740991 });
  });

  it("pbrl generate --seed: refused with the seed as given, before the model loads", async () => {
    const r = await runCli(["generate", "--model", TINY_LLAMA, "--prompt", "hi", "--seed", "9007199254740993", "--backend", "wasm"]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`pbrl generate: --seed 9007199254740993 ${ABOVE}; use a smaller seed\n`);
  });
});
