// push_to_hub (TRL's name) at the end of an iterative run, against a loopback double of the
// Hugging Face hub (models' test fixture): every file of output_dir/agents arrives, with a model
// card holding the run's config and final eval; the token is checked before output_dir is touched
// and appears in no file the run writes.
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, MADPOIterTrainer } from "../src/index.js";
import { startHubDouble, type HubDouble } from "@pbrl/test-fixtures";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

const TOKEN = "hf_pushTestToken0123456789";
let hub: HubDouble;
const saved = { endpoint: process.env["HF_ENDPOINT"], token: process.env["HF_TOKEN"] };

beforeAll(async () => {
  hub = await startHubDouble();
  hub.token = TOKEN;
  process.env["HF_ENDPOINT"] = hub.hubUrl;
});
afterAll(async () => {
  await hub.close();
  for (const [k, v] of [
    ["HF_ENDPOINT", saved.endpoint],
    ["HF_TOKEN", saved.token],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const args = (out: string) => ({
  ...ITERATIVE_RUN.args,
  num_iterations: 1,
  output_dir: out,
  verbose: false,
  push_to_hub: true,
  hub_model_id: "team/pbrl-agents",
});

describe("push_to_hub", () => {
  it("without HF_TOKEN the run stops before output_dir exists; with it, the agents and a model card reach the hub", async () => {
    delete process.env["HF_TOKEN"];
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-push-")), "run");
    expect(() => new MADPOIterTrainer({ ...ITERATIVE_RUN, args: { ...args(out), hub_model_id: null } })).toThrow(
      /hub_model_id: is required with push_to_hub=true/,
    );
    const early = new MADPOIterTrainer({ ...ITERATIVE_RUN, args: args(out) });
    await expect(early.train()).rejects.toThrow(ConfigError);
    await expect(early.train()).rejects.toThrow(/push_to_hub: needs a Hugging Face token .* HF_TOKEN/);
    early.dispose();
    expect(existsSync(out)).toBe(false);

    process.env["HF_TOKEN"] = TOKEN;
    const t = new MADPOIterTrainer({ ...ITERATIVE_RUN, args: args(out) });
    const r = await t.train();
    t.dispose();
    const repo = hub.repos.get("team/pbrl-agents")!;
    const agents = path.join(out, "agents");
    const local = readdirSync(agents, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(agents, path.join(e.parentPath, e.name)))
      .sort();
    expect([...repo.files.keys()].sort()).toEqual(local);
    for (const f of local) expect(repo.files.get(f)!.equals(readFileSync(path.join(agents, f))), f).toBe(true);
    const card = repo.files.get("README.md")!.toString();
    expect(card).toMatch(/trained with pbrl|pbrl/);
    expect(card).toContain(`Final evaluation: mean task reward ${r.evalAfter!["eval/turn_1/reward_mean"].toFixed(4)}`);
    expect(card).toContain('"hub_model_id": "team/pbrl-agents"');
    const written = readdirSync(out, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    for (const e of written) expect(readFileSync(path.join(e.parentPath, e.name)).includes(TOKEN), e.name).toBe(false);
  }, 240_000);
});
