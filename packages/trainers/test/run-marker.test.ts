// .pbrl-run.json on real folders: what counts as pbrl's list, which names it may hold, and how it
// is written (whole or not at all: a temporary sibling renamed over it).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readRunMarker, RUN_MARKER, writeRunMarker } from "../src/run-marker.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-marker-"));
const ABOUT = "pbrl wrote the entries listed here; overwrite_output_dir replaces only these and never anything else in this folder";

describe("run marker", () => {
  it("is written sorted, without repeats, with who wrote it and what it means, and nothing left beside it", () => {
    const d = tmp();
    writeRunMarker(d, ["metrics.jsonl", "agents", "config.json", "agents"]);
    expect(RUN_MARKER).toBe(".pbrl-run.json");
    expect(readFileSync(path.join(d, ".pbrl-run.json"), "utf8")).toBe(
      JSON.stringify({ written_by: "pbrl", about: ABOUT, entries: ["agents", "config.json", "metrics.jsonl"] }, null, 2) + "\n",
    );
    expect([...(readRunMarker(d) as Set<string>)]).toEqual(["agents", "config.json", "metrics.jsonl"]);
    // replaced whole
    writeRunMarker(d, []);
    expect(readRunMarker(d)).toEqual(new Set());
    expect(readdirSync(d)).toEqual([RUN_MARKER]);
  });

  it("no marker is undefined; one not written by pbrl, without a list, or not JSON is damaged", () => {
    const d = tmp();
    expect(readRunMarker(d)).toBeUndefined();
    const file = path.join(d, RUN_MARKER);
    for (const text of [
      "{",
      "null",
      JSON.stringify({ written_by: "someone", entries: [] }),
      JSON.stringify({ entries: ["agents"] }),
      JSON.stringify({ written_by: "pbrl", entries: "agents" }),
      JSON.stringify({ written_by: "pbrl" }),
    ]) {
      writeFileSync(file, text);
      expect(readRunMarker(d)).toBe("damaged");
    }
  });

  it("lists only names of the folder's own entries: no paths, no . or .., not the marker itself, not empty", () => {
    const d = tmp();
    writeFileSync(
      path.join(d, RUN_MARKER),
      JSON.stringify({ written_by: "pbrl", entries: ["agents", "", ".", "..", "../up", "a/b", "a\\b", RUN_MARKER, 3, null, ".hidden", "..x"] }),
    );
    expect([...(readRunMarker(d) as Set<string>)]).toEqual(["agents", ".hidden", "..x"]);
  });

  it("a marker that cannot be written leaves no temporary behind and throws", () => {
    const d = tmp();
    // the marker's name taken by a folder: the rename over it fails
    mkdirSync(path.join(d, RUN_MARKER));
    expect(() => writeRunMarker(d, ["agents"])).toThrow(/EISDIR/);
    expect(readdirSync(d)).toEqual([RUN_MARKER]);
  });

  it("leaves no file descriptor open, written or not", () => {
    const d = tmp();
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    for (let i = 0; i < 5; i++) writeRunMarker(d, ["agents"]);
    expect(fds()).toBe(before);
    const blocked = tmp();
    mkdirSync(path.join(blocked, RUN_MARKER));
    for (let i = 0; i < 5; i++) expect(() => writeRunMarker(blocked, ["agents"])).toThrow(/EISDIR/);
    expect(fds()).toBe(before);
  });
});
