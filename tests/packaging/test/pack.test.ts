// The packed packages (test/pack-workspace.ts) installed with pnpm into a scratch project outside
// the workspace, as on a new machine: an empty store and cache of its own, and only the global
// setup's loopback registry, which serves the packed packages and the workspace lockfile's versions
// of everything they need (so the install resolves exactly those, whatever the public registry has
// published since). A TypeScript consumer type-checks against the published typings and runs.
// pnpm refuses to run a dependency's build script until the project decides (allowBuilds); this
// project denies @pbrl/core-tensor's, as a user who skipped it would, and builds the addon
// afterwards with the rebuild command every message names.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registryMisses } from "./loopback-registry.js";
import { isolatedNpmEnv, isolatedPnpmEnv, npm } from "./npm-env.js";
import { CONSUMER_TOOLS, FIXTURE, NATIVE_REQUIRED, REBUILD_ARGS, REBUILD_COMMAND, ROOT } from "./workspace.js";

const reference = JSON.parse(readFileSync(path.join(ROOT, "tests/test-fixtures/models/tiny-llama.reference.json"), "utf8")) as {
  greedy: { results: { text_prompt: string; input_ids: number[]; new_token_ids: number[] }[] };
};

const run = (cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): string =>
  execFileSync(cmd, args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

const PACKED = inject("packedPackages");
let work: string;
let scratch: string;
let builtByPnpm: boolean;
let rebuildLog: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "pbrl-consumer-"));
  scratch = path.join(work, "project");
  mkdirSync(scratch);
  writeFileSync(
    path.join(scratch, "package.json"),
    JSON.stringify(
      {
        name: "consumer",
        private: true,
        type: "module",
        dependencies: Object.fromEntries(PACKED.map((p) => [p.name, p.version])),
        devDependencies: CONSUMER_TOOLS,
      },
      null,
      2,
    ),
  );
  // A workspace file of its own keeps pnpm from climbing into ours.
  writeFileSync(path.join(scratch, "pnpm-workspace.yaml"), `packages: []\nallowBuilds:\n  core-js: false\n  "@pbrl/core-tensor": false\n`);
  try {
    run("pnpm", ["install"], scratch, isolatedPnpmEnv(path.join(work, "home"), inject("registryUrl")));
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `pnpm install failed in ${scratch}: ${err.message}\n${err.stdout ?? ""}${err.stderr ?? ""}\nrequests the registry could not answer: ${registryMisses(inject("registryMissesFile"))}`,
    );
  }
  builtByPnpm = existsSync(path.join(scratch, "node_modules/@pbrl/core-tensor/native/build/Release/pbrl_native.node"));
  // The libtorch addon's install is the npm suite's (npm-install.test.ts); here only the native one.
  rebuildLog = await npm(REBUILD_ARGS, scratch, { ...isolatedNpmEnv(path.join(work, "npm")), PBRL_LIBTORCH: "off" });
});

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** name@version of every package a pnpm lockfile's `packages:` sections hold (each YAML document of it). */
function lockedPackages(lockfile: string): Set<string> {
  const out = new Set<string>();
  let inPackages = false;
  for (const line of readFileSync(lockfile, "utf8").split("\n")) {
    if (/^\S/.test(line)) inPackages = line === "packages:";
    const m = inPackages ? /^ {2}'?((?:@[^/\s]+\/)?[^@\s']+)@([^('\s:]+)/.exec(line) : null;
    if (m !== null) out.add(`${m[1]}@${m[2]}`);
  }
  return out;
}

/** The first TypeScript example of a README: the one each package README shows what it owns with. */
function firstTsBlock(markdown: string, where: string): string {
  const m = /```ts\n([\s\S]*?)```/.exec(markdown);
  if (m === null) throw new Error(`${where}'s README.md has no \`\`\`ts example`);
  return m[1]!;
}

/** docs/library.md's TypeScript examples, but those of sections marked as a planned API. */
function libraryDocExamples(): string[] {
  const sections = readFileSync(path.join(ROOT, "docs/library.md"), "utf8").split(/^## /m);
  return sections.filter((s) => !s.includes("PLANNED API")).flatMap((s) => [...s.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!));
}

describe("packed packages in a project outside the workspace", () => {
  it("resolve exactly the workspace lockfile's versions of every third-party package", () => {
    const workspace = lockedPackages(path.join(ROOT, "pnpm-lock.yaml"));
    const consumer = [...lockedPackages(path.join(scratch, "pnpm-lock.yaml"))].filter((p) => !p.startsWith("@pbrl/") && !p.startsWith("pbrl@"));
    expect(consumer.length).toBeGreaterThan(20); // the lockfile was read (35 packages without the @tensorflow/tfjs bundle)
    expect(consumer.filter((p) => !workspace.has(p))).toEqual([]);
  });

  it("ship README.md, the root's LICENSE and built files, with exports that name only shipped files", () => {
    const license = readFileSync(path.join(ROOT, "LICENSE"), "utf8");
    expect(license).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    for (const p of PACKED) {
      const pkgDir = path.join(scratch, "node_modules", p.name);
      const manifest = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8")) as {
        license: string;
        exports: Record<string, Record<string, string>>;
        imports?: Record<string, string>;
        dependencies?: Record<string, string>;
      };
      expect(manifest.license, p.name).toBe("Apache-2.0");
      expect(readFileSync(path.join(pkgDir, "LICENSE"), "utf8"), `${p.name}'s LICENSE`).toBe(license);
      expect(readFileSync(path.join(pkgDir, "README.md"), "utf8"), p.name).toMatch(new RegExp(`^# ${p.name}\n`));
      expect(manifest.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
      for (const target of [...Object.values(manifest.exports["."]!), ...Object.values(manifest.imports ?? {})]) {
        expect(existsSync(path.join(pkgDir, target)), `${p.name} names ${target}, which it does not ship`).toBe(true);
      }
      expect(Object.values(manifest.dependencies ?? {}).some((v) => v.startsWith("workspace:"))).toBe(false);
      expect(readdirSync(pkgDir)).toEqual(expect.arrayContaining(["dist", "package.json", "README.md", "LICENSE"]));
      expect(readdirSync(pkgDir)).not.toContain("src");
    }
  });

  it("type-check and run a TypeScript consumer of every package", () => {
    const r = reference.greedy.results[0]!;
    writeFileSync(
      path.join(scratch, "use.ts"),
      `import { useBackend, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, generate, scoreCompletions, type Pretrained } from "@pbrl/models";
import { selectPairs } from "@pbrl/preference-data";
import { loadDataset, type DatasetError } from "@pbrl/preference-data";
export const loadData: typeof loadDataset = loadDataset;
export type LoadFailure = DatasetError;
import { madpoLoss } from "@pbrl/dpo";
import { MADPOConfig, type Comparator, type ReplayBuffer } from "@pbrl/trainers";
import { TaggedCentralizedAdapter } from "@pbrl/comparators";
import { lambdaWeights, OnDiskReplayBuffer } from "@pbrl/replay";
import { formatNumber } from "@pbrl/report";
import { jointText } from "@pbrl/reward-model";
import { sequenceKl } from "@pbrl/rl-backends";
import { cliVersion, main } from "pbrl";

export type Plugins = { comparator: Comparator; replay: ReplayBuffer; buffer: typeof OnDiskReplayBuffer; run: typeof main; joint: typeof jointText };

await useBackend("wasm");
const p: Pretrained = await loadPretrained(${JSON.stringify(FIXTURE)});
const ids: number[] = p.tokenizer!.encode(${JSON.stringify(r.text_prompt)});
const [out] = generate(p.model, [ids], { maxNewTokens: ${r.new_token_ids.length}, greedy: true });
const sampled = generate(p.model, [ids], { maxNewTokens: 4, rng: RngStream.fromSeed(1, "x") });
const score = scoreCompletions(p.model, [{ promptIds: ids, completionIds: out!.tokens }]);
const cfg = MADPOConfig({ num_agents: 2, dpo_beta: 0.2 });
const pairs = selectPairs([0.1, 0.9, 0.5], "reward_gap", 2);
const others = { weights: lambdaWeights(2, 0.5), kl: sequenceKl([-1], [-1]), tagged: new TaggedCentralizedAdapter().parseCompletion("<agent_0>a</agent_0><agent_1>b</agent_1>", {}, 2), pct: formatNumber(0.5), version: cliVersion() };
console.log(JSON.stringify({ ids, tokens: out!.tokens, sampled: sampled[0]!.tokens.length, sum: score.sums[0], beta: cfg.dpo_beta, pairs, loss: madpoLoss([0], 1), others }));
`,
    );
    // Every package README's example and docs/library.md's examples, type-checked beside it.
    const examples = [
      ...PACKED.map((p) => ({ name: p.name, code: firstTsBlock(readFileSync(path.join(scratch, "node_modules", p.name, "README.md"), "utf8"), p.name) })),
      ...libraryDocExamples().map((code, i) => ({ name: `docs/library.md example ${i + 1}`, code })),
    ];
    mkdirSync(path.join(scratch, "examples"), { recursive: true });
    examples.forEach((e, i) => writeFileSync(path.join(scratch, "examples", `example-${i}.ts`), `// ${e.name}\n${e.code}`));
    writeFileSync(
      path.join(scratch, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: false,
          outDir: "out",
          types: ["node"],
        },
        include: ["use.ts", "examples"],
      }),
    );
    try {
      run(path.join(scratch, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], scratch);
    } catch (e) {
      const err = e as Error & { stdout?: string };
      throw new Error(`a strict consumer does not type-check (examples in ${path.join(scratch, "examples")}):\n${err.stdout ?? err.message}`);
    }
    const result = JSON.parse(run(process.execPath, ["out/use.js"], scratch)) as {
      ids: number[];
      tokens: number[];
      sampled: number;
      sum: number;
      beta: number;
      pairs: number[][];
      loss: number;
    };
    expect(result.beta).toBe(0.2);
    expect(result.pairs).toEqual([
      [1, 0],
      [1, 2],
    ]);
    expect(result.loss).toBeCloseTo(Math.log(2), 12);
    expect(result.ids).toEqual(r.input_ids);
    expect(result.tokens).toEqual(r.new_token_ids);
    expect(result.sampled).toBe(4);
    expect(Number.isFinite(result.sum)).toBe(true);
  });

  it("build the native addon once with the rebuild command where pnpm did not build it", () => {
    expect(builtByPnpm).toBe(false);
    // npm runs the install step once per package that links @pbrl/core-tensor in pnpm's layout;
    // the first run builds, the others find its build.
    const lines = rebuildLog.split("\n").filter((l) => l.startsWith("pbrl native addon: "));
    expect(lines.length, rebuildLog).toBeGreaterThan(0);
    const built = lines.filter((l) => /^pbrl native addon: built in [\d.]+ s against OpenBLAS \S+: the native backend is available$/.test(l));
    const kept = lines.filter((l) =>
      /^pbrl native addon: up to date \(built from these sources before\) against OpenBLAS \S+: the native backend is available$/.test(l),
    );
    if (NATIVE_REQUIRED || built.length > 0) {
      expect(built).toHaveLength(1);
      expect(kept).toHaveLength(lines.length - 1);
    } else {
      for (const l of lines) expect(l).toMatch(/^pbrl native addon: not built \(/);
      for (const l of lines) expect(l).toContain(REBUILD_COMMAND);
    }
  });

  it("install the pbrl command", () => {
    const out = run(
      path.join(scratch, "node_modules/.bin/pbrl"),
      ["generate", "--model", FIXTURE, "--prompt", "The cat", "--greedy", "--max_new_tokens", "3", "--json"],
      scratch,
    );
    expect((JSON.parse(out) as { results: { token_ids: number[] }[] }).results[0]!.token_ids).toEqual(reference.greedy.results[0]!.new_token_ids.slice(0, 3));
  });
});
