// `pbrl config schema|reference --out FILE` writes a new file or replaces its own earlier output;
// a file the user wrote is refused and kept.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";

describe("config --out", () => {
  it("writes, replaces its own output, and refuses a user's file", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-config-out-"));
    const schema = path.join(dir, "run.schema.json");
    expect((await runCli(["config", "schema", "madpo", "--out", schema])).code).toBe(0);
    expect(JSON.parse(readFileSync(schema, "utf8")).title).toBe("pbrl madpo run file");
    expect((await runCli(["config", "schema", "madpo_iter", "--out", schema])).code).toBe(0);
    expect(JSON.parse(readFileSync(schema, "utf8")).title).toBe("pbrl madpo_iter run file");
    const mine = path.join(dir, "notes.md");
    writeFileSync(mine, "my notes\n");
    for (const argv of [
      ["config", "reference", "--out", mine],
      ["config", "schema", "madpo", "--out", mine],
    ]) {
      const r = await runCli(argv);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/already exists and was not written by this command; it is not replaced/);
    }
    expect(readFileSync(mine, "utf8")).toBe("my notes\n");
  });
});
