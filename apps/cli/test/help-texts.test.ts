import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { BACKEND_NAMES, loadNativeAddon, parseBackendName, useBackend, useDefaultBackend } from "@pbrl/core-tensor";
import { TRAINER_CONFIGS, fieldDocs } from "@pbrl/trainers";
import { describe, expect, it } from "vitest";
import { CONFIG_HELP } from "../src/commands/config.js";
import { TRAIN_HELP } from "../src/commands/train.js";
import { TRAINERS } from "../src/run-config.js";
import { runCli } from "./capture.js";

const COMMANDS_DIR = path.resolve(import.meta.dirname, "../src/commands");

/** How the help texts state the default backend: the order useDefaultBackend follows. */
const DEFAULT_WORDING = "default: $PBRL_BACKEND, else native when built, else wasm";

/** The commands whose flags include --backend (they spread `backendFlag` from common.ts). */
const backendCommands = readdirSync(COMMANDS_DIR)
  .filter((f) => f.endsWith(".ts") && f !== "common.ts" && readFileSync(path.join(COMMANDS_DIR, f), "utf8").includes("...backendFlag"))
  .map((f) => f.replace(/\.ts$/, ""));

/** A help's `--backend B` entry, its wrapped lines joined. */
function backendEntry(help: string): string {
  const lines = help.split("\n");
  const at = lines.findIndex((l) => l.startsWith("  --backend B "));
  if (at < 0) throw new Error("no --backend B entry");
  const rest = lines.slice(at + 1);
  const end = rest.findIndex((l) => !/^ {4,}\S/.test(l));
  return [lines[at]!.replace(/^ {2}--backend B +/, ""), ...rest.slice(0, end < 0 ? rest.length : end)].join(" ").replace(/\s+/g, " ");
}

describe("--help of the commands that take --backend", () => {
  it("are generate, score and convert", () => {
    expect(backendCommands.sort()).toEqual(["convert", "generate", "score"]);
  });

  for (const command of ["convert", "generate", "score"]) {
    it(`${command}: names exactly core-tensor's backends and the default as the code picks it`, async () => {
      const r = await runCli([command, "--help"]);
      expect(r.code).toBe(0);
      const entry = backendEntry(r.out);
      const names = entry.slice(0, entry.indexOf(" (")).split(/, | or /);
      expect([...names].sort()).toEqual([...BACKEND_NAMES].sort());
      // Before: "(default: native when built, else wasm)", silent about PBRL_BACKEND, which wins.
      expect(entry).toContain(DEFAULT_WORDING);
    });
  }

  it("the default they state is the one useDefaultBackend picks: PBRL_BACKEND, else native when built, else wasm", async () => {
    const saved = { backend: process.env["PBRL_BACKEND"], native: process.env["PBRL_NATIVE"] };
    const restore = (k: string, v: string | undefined) => (v === undefined ? delete process.env[k] : (process.env[k] = v));
    try {
      process.env["PBRL_BACKEND"] = "cpu";
      expect((await useDefaultBackend()).name).toBe("cpu");
      delete process.env["PBRL_BACKEND"];
      process.env["PBRL_NATIVE"] = "off";
      expect((await useDefaultBackend()).name).toBe("wasm");
      restore("PBRL_NATIVE", saved.native);
      expect((await useDefaultBackend()).name).toBe(loadNativeAddon().ok ? "native" : "wasm");
    } finally {
      restore("PBRL_BACKEND", saved.backend);
      restore("PBRL_NATIVE", saved.native);
      await useBackend(parseBackendName(process.env["PBRL_BACKEND"] ?? "wasm"));
    }
  });

  it("the backend config field accepts auto and the same names, and describes auto the same way", () => {
    const backend = fieldDocs(TRAINER_CONFIGS.madpo.fields).find((d) => d.name === "backend")!;
    expect(backend.choices).toEqual(["auto", ...BACKEND_NAMES]);
    expect(backend.description).toContain("auto: $PBRL_BACKEND, else native when built, else wasm");
  });
});

describe("the trainers in the help texts", () => {
  it("config --help names the four trainers and their configs, and every subcommand", async () => {
    // Before: the help named two trainers in one place and listed only `validate`.
    const r = await runCli(["config", "--help"]);
    expect(r.out).toBe(CONFIG_HELP);
    for (const t of TRAINERS) expect(CONFIG_HELP).toMatch(new RegExp(`^ {2}${t} +${TRAINER_CONFIGS[t].configName} `, "m"));
    for (const sub of ["validate", "fields", "schema", "reference"]) {
      expect(CONFIG_HELP).toMatch(new RegExp(`^pbrl config ${sub}\\b`, "m"));
      expect(CONFIG_HELP).toMatch(new RegExp(`^${sub} `, "m"));
    }
  });

  it("train --help names the four trainers and their configs", () => {
    for (const t of TRAINERS) expect(TRAIN_HELP).toMatch(new RegExp(`\\b${t}\\b`));
    for (const { configName } of Object.values(TRAINER_CONFIGS)) expect(TRAIN_HELP).toContain(configName);
  });

  it("each subcommand of config --help runs", async () => {
    for (const argv of [["validate", "madpo"], ["fields", "madpo"], ["schema", "madpo"], ["reference"]]) {
      const r = await runCli(["config", ...argv]);
      expect(r.code, `${argv.join(" ")}: ${r.err}`).toBe(0);
    }
  });
});
