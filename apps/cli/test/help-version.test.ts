import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { cliVersion } from "../src/version.js";
import { runCli } from "./capture.js";

const PKG = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../package.json"), "utf8")) as { name: string; version: string };

describe("pbrl --version", () => {
  it("prints the CLI package's version, as --version, -V, -v and version", async () => {
    // Before: `pbrl --version` was an unknown command (exit code 2).
    for (const arg of ["--version", "-V", "-v", "version"]) {
      const r = await runCli([arg]);
      expect(r, arg).toEqual({ code: 0, out: `pbrl ${PKG.version}\n`, err: "" });
    }
    expect(PKG.name).toBe("pbrl");
  });

  it("is mentioned in the usage", async () => {
    expect((await runCli(["--help"])).out).toContain("pbrl --version");
  });

  it("finds package.json from an installed package's dist/ and from a folder deeper down", () => {
    const root = mkdtempSync(path.join(tmpdir(), "pbrl-version-"));
    const pkg = path.join(root, "node_modules", "pbrl");
    mkdirSync(path.join(pkg, "dist"), { recursive: true });
    writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "pbrl", version: "9.8.7" }));
    expect(cliVersion(pathToFileURL(path.join(pkg, "dist", "version.js")).href)).toBe("9.8.7");
    // A package.json of another package on the way up (here: a cache folder's) is passed over.
    const deep = path.join(pkg, "node_modules", ".cache", "build-1");
    mkdirSync(deep, { recursive: true });
    writeFileSync(path.join(pkg, "node_modules", "package.json"), JSON.stringify({ name: "other", version: "1.0.0" }));
    expect(cliVersion(pathToFileURL(path.join(deep, "version.js")).href)).toBe("9.8.7");
    expect(cliVersion(pathToFileURL(path.join(root, "x.js")).href)).toBe("unknown");
  });
});
