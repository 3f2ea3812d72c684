// Issue 28, "secrets stay on the machine": a secret in comparator_api_extra_body (or in the API
// URL's access_key_id=) reaches the API server and no file: not config.json, not a checkpoint's
// state.json, not the model card push_to_hub uploads (which also names no local folder); and a run
// resumed with the same secret continues, its redacted value comparing as unchanged. A real
// generic-format API server (the key in the body) and the hub double, both on 127.0.0.1.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHubDouble, type HubDouble } from "@pbrl/test-fixtures";
import { MADPOConfig, MADPOIterConfig, MADPOIterTrainer, MARLHFConfig, MARLHFIterConfig } from "../src/index.js";
import { runModelCard } from "../src/push-agents.js";
import { configChanges } from "../src/resume-changes.js";
import { runConfigRecord } from "../src/run-config-record.js";
import { saveTrainingCheckpoint, type TrainingState } from "../src/training-checkpoint.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

const BODY_KEY = "body-key-plain-5521";
const NESTED = "nested-session-8830";
const URL_ID = "akid-plain-7764";
const HF = "hf_secretsOnDiskToken0123456789";
const SECRETS = [BODY_KEY, NESTED, URL_ID, HF];

/** Every file under dir, recursively. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));

const leaks = (dir: string) => filesUnder(dir).filter((f) => SECRETS.some((s) => readFileSync(f).includes(s)));

describe("secrets in the run's config", () => {
  let api: Server;
  let origin = "";
  let hub: HubDouble;
  const bodies: Record<string, unknown>[] = [];
  const saved = { endpoint: process.env["HF_ENDPOINT"], token: process.env["HF_TOKEN"] };
  beforeAll(async () => {
    api = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
      req.on("end", () => {
        const body = JSON.parse(raw) as Record<string, unknown>;
        bodies.push(body);
        const completions = Array.from({ length: Number(body["num_return_sequences"] ?? 1) }, (_, i) => (i % 2 ? " e e" : " no"));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ completions }));
      });
    });
    await new Promise<void>((r) => api.listen(0, "127.0.0.1", r));
    origin = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    hub = await startHubDouble();
    hub.token = HF;
    process.env["HF_ENDPOINT"] = hub.hubUrl;
    process.env["HF_TOKEN"] = HF;
  });
  afterAll(async () => {
    await hub.close();
    await new Promise<void>((r) => api.close(() => r()));
    for (const [k, v] of [
      ["HF_ENDPOINT", saved.endpoint],
      ["HF_TOKEN", saved.token],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("reach the API server and no file (config.json, state.json, model card); a resume with the same secret continues", async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-secrets-")), "run");
    const lines: string[] = [];
    const args = (num_iterations: number) => ({
      ...ITERATIVE_RUN.args,
      num_iterations,
      eval_interval: 1,
      output_dir: out,
      comparator_policy: "api" as const,
      comparator_history_k: null,
      comparator_api_format: "generic" as const,
      comparator_api_url: `${origin}/generate?access_key_id=${URL_ID}&team=a`,
      comparator_api_extra_body: { api_key: BODY_KEY, metadata: { session_token: NESTED, user_id: "u1" } },
      push_to_hub: true,
      hub_model_id: "team/secret-run",
    });
    const first = new MADPOIterTrainer({ ...ITERATIVE_RUN, log: (l) => lines.push(l), args: args(1) });
    await first.train();
    first.dispose();

    // The secrets did their job: the server got them.
    expect(bodies.length).toBeGreaterThan(0);
    expect(bodies.every((b) => b["api_key"] === BODY_KEY && (b["metadata"] as Record<string, unknown>)["session_token"] === NESTED)).toBe(true);
    // No file holds one; what is not a secret is kept as the user wrote it.
    expect(leaks(out)).toEqual([]);
    const config = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config["comparator_api_extra_body"]).toEqual({ api_key: "[REDACTED]", metadata: { session_token: "[REDACTED]", user_id: "u1" } });
    expect(config["comparator_api_url"]).toBe(`${origin}/generate?access_key_id=REDACTED&team=a`);
    const state = JSON.parse(readFileSync(path.join(out, "checkpoints", "round_0001", "state.json"), "utf8")) as { config: Record<string, unknown> };
    expect(state.config["comparator_api_extra_body"]).toEqual(config["comparator_api_extra_body"]);
    // The card on the (public by default) hub: no secret, no folder of this machine.
    const card = hub.repos.get("team/secret-run")!.files.get("README.md")!.toString();
    for (const s of SECRETS) expect(card).not.toContain(s);
    expect(card).not.toContain(path.dirname(out));
    expect(card).not.toContain(tmpdir());
    expect(card).toContain('"output_dir": "run"');
    expect(card).toContain('"user_id": "u1"');

    // Resumed with the same secret: no refused change, and only num_iterations recorded as changed.
    const again = new MADPOIterTrainer({ ...ITERATIVE_RUN, log: (l) => lines.push(l), args: { ...args(2), resume_from_checkpoint: true } });
    const r = await again.train();
    again.dispose();
    expect(r.rounds.map((x) => x.round)).toEqual([2]);
    const resumed = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as { resume_changes: { changes: { field: string }[] }[] };
    expect(resumed.resume_changes.flatMap((c) => c.changes.map((x) => x.field))).toEqual(["num_iterations"]);
    expect(leaks(out)).toEqual([]);
    expect(lines.filter((l) => SECRETS.some((s) => l.includes(s)))).toEqual([]);
  }, 240_000);
});

describe("redacted comparisons and the card's config", () => {
  it("a checkpoint that recorded a secret in clear (before redaction) resumes with it, and a change names no secret", () => {
    const clear = { trainer: "madpo_iter", comparator_api_extra_body: { api_key: BODY_KEY, user_id: "u1" } };
    const now = runConfigRecord("madpo_iter", { comparator_api_extra_body: { api_key: BODY_KEY, user_id: "u1" } });
    expect(configChanges(clear, now)).toEqual([]);
    const changed = configChanges(clear, runConfigRecord("madpo_iter", { comparator_api_extra_body: { api_key: BODY_KEY, user_id: "u2" } }));
    expect(changed).toEqual([
      {
        field: "comparator_api_extra_body",
        from: { api_key: "[REDACTED]", user_id: "u1" },
        to: { api_key: "[REDACTED]", user_id: "u2" },
      },
    ]);
  });

  it("a checkpoint's state.json holds its config redacted, whoever built the state", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "pbrl-secrets-ckpt-"));
    const state = {
      format: "pbrl-training-checkpoint/1",
      trainer: "madpo_iter",
      round: 1,
      counters: { envStep: 0, updates: 0 },
      rng: {},
      replay: {},
      metricsLines: 0,
      numAgents: 0,
      seed: 1,
      config: { comparator_api_extra_body: { api_key: BODY_KEY }, comparator_api_url: `http://h/g?access_key_id=${URL_ID}` },
    } as unknown as TrainingState;
    const dir = await saveTrainingCheckpoint(root, state, [], []);
    const written = JSON.parse(readFileSync(path.join(dir, "state.json"), "utf8")) as TrainingState;
    expect(written.config).toEqual({ comparator_api_extra_body: { api_key: "[REDACTED]" }, comparator_api_url: "http://h/g?access_key_id=REDACTED" });
    expect(leaks(root)).toEqual([]);
  });

  it("the model card shows every local path by its base name and redacts a record given unredacted", () => {
    const record = {
      trainer: "madpo_iter",
      output_dir: "/home/alice/runs/exp1",
      policy_checkpoint_dir: "C:\\Users\\alice\\ckpt",
      preference_replay_dir: "~/replay",
      comparator_model_name: "./models/judge",
      reward_model_name: "file:///srv/models/rm",
      resume_from_checkpoint: "../old/checkpoints/round_0002",
      critic_model_name: "Qwen/Qwen2.5-0.5B",
      comparator_api_url: "https://user:pw@api.example.com/v1?key=k1",
      comparator_api_extra_body: { api_key: BODY_KEY },
    };
    const card = runModelCard({ agentsDir: "/x", repo: "a/b", trainer: "madpo_iter", record, evalAfter: undefined, baseModel: undefined }, []);
    const shown = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(card)![1]!) as Record<string, unknown>;
    expect(shown).toEqual({
      trainer: "madpo_iter",
      output_dir: "exp1",
      policy_checkpoint_dir: "ckpt",
      preference_replay_dir: "replay",
      comparator_model_name: "judge",
      reward_model_name: "rm",
      resume_from_checkpoint: "round_0002",
      critic_model_name: "Qwen/Qwen2.5-0.5B",
      comparator_api_url: "https://api.example.com/v1?key=REDACTED",
      comparator_api_extra_body: { api_key: "[REDACTED]" },
    });
    expect(card).not.toMatch(/alice|\/srv\/|pw@|k1|body-key/);
  });

  it("no field of any trainer's default config is taken for a secret", () => {
    for (const [name, args] of Object.entries({
      madpo: MADPOConfig({}),
      madpo_iter: MADPOIterConfig({}),
      marlhf: MARLHFConfig({}),
      marlhf_iter: MARLHFIterConfig({}),
    })) {
      expect(runConfigRecord(name, args), name).toEqual(JSON.parse(JSON.stringify({ trainer: name, ...args })));
    }
  });
});
