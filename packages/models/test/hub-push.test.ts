// pushToHub: folders with agent subfolders keep their paths, the model card names the base model
// (given, or from config.json when it is a hub id), the hub's 5xx is retried, offline refuses,
// and upload progress reaches the listener.
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { HubPushError, modelCard, pushToHub, type HubProgress } from "../src/index.js";
import { useHubDouble } from "@pbrl/test-fixtures";
import { FIXTURES } from "./reference.js";

const TOKEN = "hf_models_push_77";
const hub = useHubDouble(TOKEN);

function runFolder(): string {
  const root = mkdtempSync(path.join(tmpdir(), "pbrl-pushlib-"));
  for (const a of ["agent_0", "agent_1"]) cpSync(path.join(FIXTURES, "tiny-llama"), path.join(root, a), { recursive: true });
  return root;
}

describe("pushToHub", () => {
  it("uploads nested agent folders, retries a 503, and reports progress per file", async () => {
    const dir = runFolder();
    hub.failOnce.add("/commit/main");
    const events: HubProgress[] = [];
    const r = await pushToHub({
      dir,
      repo: "team/pair",
      token: TOKEN,
      hubUrl: hub.hubUrl,
      baseModel: "Qwen/Qwen2.5-0.5B",
      retry: { baseDelayMs: 5 },
      onProgress: (e) => events.push(e),
    });
    const repo = hub.repos.get("team/pair")!;
    expect(r).toMatchObject({ repo: "team/pair", url: `${hub.hubUrl}/team/pair`, commit: repo.commit, createdRepo: true, generatedModelCard: true });
    expect(r.files).toContain("agent_1/model.safetensors");
    expect(r.files).toHaveLength(11);
    for (const f of r.files.filter((f) => f !== "README.md")) expect(repo.files.get(f)!.equals(readFileSync(path.join(dir, f)))).toBe(true);
    const card = repo.files.get("README.md")!.toString();
    expect(card).toContain("base_model: Qwen/Qwen2.5-0.5B\n");
    expect(card).toContain("- Agents: agent_0, agent_1");
    expect(card).toContain('subfolder="agent_0"');
    // The retry committed again without creating the repository again.
    expect(hub.requests.filter((q) => q.url === "/api/repos/create").length).toBe(1);
    expect(hub.requests.filter((q) => q.url === "/api/models/team/pair/commit/main").length).toBe(2);
    const done = events.filter((e) => e.done);
    expect(new Set(done.map((e) => e.file))).toEqual(new Set(r.files));
    expect(done.every((e) => e.direction === "upload" && e.bytes === e.total)).toBe(true);
  });

  it("refuses offline, without a token, and an empty folder", async () => {
    const dir = runFolder();
    process.env["HF_HUB_OFFLINE"] = "1";
    await expect(pushToHub({ dir, repo: "team/x", token: TOKEN, hubUrl: hub.hubUrl })).rejects.toThrow(
      /HF_HUB_OFFLINE is set, so pbrl may not reach the hub; unset it to push team\/x/,
    );
    delete process.env["HF_HUB_OFFLINE"];
    delete process.env["HF_TOKEN"];
    await expect(pushToHub({ dir, repo: "team/x", hubUrl: hub.hubUrl })).rejects.toThrow(HubPushError);
    await expect(pushToHub({ dir: mkdtempSync(path.join(tmpdir(), "pbrl-empty-")), repo: "team/x", token: TOKEN, hubUrl: hub.hubUrl })).rejects.toThrow(
      /holds no files to upload/,
    );
    expect(hub.requests).toEqual([]);
    // Nothing listens there: one quick, clear failure rather than minutes of retries.
    const closed = createServer();
    const port = await new Promise<number>((r) => closed.listen(0, "127.0.0.1", () => r((closed.address() as AddressInfo).port)));
    await new Promise((r) => closed.close(r));
    const t0 = Date.now();
    await expect(pushToHub({ dir, repo: "team/x", token: TOKEN, hubUrl: `http://127.0.0.1:${port}` })).rejects.toThrow(
      new RegExp(`uploading .* to team/x on http://127\\.0\\.0\\.1:${port} failed: ECONNREFUSED`),
    );
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe("modelCard", () => {
  it("names the base model from config.json only when it is a hub id", () => {
    expect(modelCard({ repo: "a/b", config: { _name_or_path: "Qwen/Qwen2.5-0.5B" } })).toContain("base_model: Qwen/Qwen2.5-0.5B");
    const local = modelCard({ repo: "a/b", config: { _name_or_path: "/home/me/ckpt" } });
    expect(local).not.toContain("base_model:");
    expect(local).toContain("- Base model: not recorded");
    expect(local).toContain('pbrl generate --model a/b --prompt "..."');
  });
});
