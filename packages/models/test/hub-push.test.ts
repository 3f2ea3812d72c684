// pushToHub: folders with agent subfolders keep their paths, the model card names the base model
// (given, or from config.json when it is a hub id), the hub's 5xx is retried, offline refuses,
// and upload progress reaches the listener. Only what the folder holds goes up: no hidden file
// unless asked, no symlink out of the folder or into a folder that holds it (a cache snapshot's
// links into its blobs excepted), and what was left out is returned.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { describeSkipped, HubPushError, modelCard, pushToHub, type HubProgress } from "../src/index.js";
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

/** Everything the hub double received, every request's body together. */
const sent = () => Buffer.concat(hub.requests.map((q) => q.body));

describe("pushToHub uploads only what the folder holds", () => {
  it("leaves out hidden files, .git, symlinks out of the folder, loops, dangling links and .incomplete files, and says so", async () => {
    const dir = runFolder();
    const outside = mkdtempSync(path.join(tmpdir(), "pbrl-pushout-"));
    writeFileSync(path.join(outside, "id_rsa"), "OUTSIDE-PRIVATE-KEY-6612");
    writeFileSync(path.join(dir, ".env"), "HF_TOKEN=DOTENV-SECRET-3390\n");
    writeFileSync(path.join(dir, ".DS_Store"), "x");
    mkdirSync(path.join(dir, ".git"));
    writeFileSync(path.join(dir, ".git", "config"), "[remote] url = https://u:GIT-SECRET-1@example.com\n");
    mkdirSync(path.join(dir, "agent_0", ".cache"));
    writeFileSync(path.join(dir, "agent_0", ".cache", "meta"), "m");
    symlinkSync(path.join(outside, "id_rsa"), path.join(dir, "agent_0", "key.txt"));
    symlinkSync(outside, path.join(dir, "outside_dir"));
    symlinkSync(".", path.join(dir, "self"));
    symlinkSync("..", path.join(dir, "agent_1", "parent"));
    symlinkSync("nowhere", path.join(dir, "dangling"));
    writeFileSync(path.join(dir, "agent_1", "model.safetensors.incomplete"), "half");
    // A link that stays inside is followed: its files go up under its own name.
    symlinkSync("agent_0", path.join(dir, "latest"));

    const r = await pushToHub({ dir, repo: "team/only-inside", token: TOKEN, hubUrl: hub.hubUrl, retry: { baseDelayMs: 5 } });
    const uploaded = [...hub.repos.get("team/only-inside")!.files.keys()].sort();
    expect(uploaded).toEqual(r.files);
    const agentFiles = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"];
    expect(uploaded).toEqual([...["agent_0", "agent_1", "latest"].flatMap((a) => agentFiles.map((f) => `${a}/${f}`)), "README.md"].sort());
    expect(r.skipped).toEqual([
      { path: ".DS_Store", reason: "hidden" },
      { path: ".env", reason: "hidden" },
      { path: ".git", reason: "git-or-cache" },
      { path: "agent_0/.cache", reason: "git-or-cache" },
      { path: "agent_0/key.txt", reason: "link-outside", target: path.join(realpathSync(outside), "id_rsa") },
      { path: "agent_1/model.safetensors.incomplete", reason: "incomplete" },
      { path: "agent_1/parent", reason: "link-loop", target: realpathSync(dir) },
      { path: "dangling", reason: "broken-link" },
      { path: "latest/.cache", reason: "git-or-cache" },
      { path: "latest/key.txt", reason: "link-outside", target: path.join(realpathSync(outside), "id_rsa") },
      { path: "outside_dir", reason: "link-outside", target: realpathSync(outside) },
      { path: "self", reason: "link-loop", target: realpathSync(dir) },
    ]);
    expect(describeSkipped(r.skipped[1]!)).toBe(".env: hidden (--include-hidden / includeHidden uploads it)");
    expect(describeSkipped(r.skipped[10]!)).toBe(`outside_dir: a symlink to ${realpathSync(outside)}, outside the folder (copy the file in to upload it)`);
    for (const secret of ["OUTSIDE-PRIVATE-KEY-6612", "DOTENV-SECRET-3390", "GIT-SECRET-1"]) expect(sent().includes(secret), secret).toBe(false);
  });

  it("the generated model card reads no config.json a link out of the folder leads to", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-pushcard-"));
    const outside = mkdtempSync(path.join(tmpdir(), "pbrl-pushout-"));
    writeFileSync(path.join(outside, "config.json"), JSON.stringify({ model_type: "OUTSIDE-TYPE-3301", architectures: ["OutsideArch"] }));
    cpSync(path.join(FIXTURES, "tiny-llama", "model.safetensors"), path.join(dir, "model.safetensors"));
    symlinkSync(path.join(outside, "config.json"), path.join(dir, "config.json"));
    const r = await pushToHub({ dir, repo: "team/card-inside", token: TOKEN, hubUrl: hub.hubUrl });
    expect(r.files).toEqual(["README.md", "model.safetensors"]);
    const card = hub.repos.get("team/card-inside")!.files.get("README.md")!.toString();
    expect(card).not.toMatch(/OUTSIDE-TYPE-3301|OutsideArch/);
    expect(sent().includes("OUTSIDE-TYPE-3301")).toBe(false);
  });

  it("uploads hidden files when asked, but never .git or .cache", async () => {
    const dir = runFolder();
    writeFileSync(path.join(dir, ".gitattributes"), "*.safetensors filter=lfs\n");
    mkdirSync(path.join(dir, ".notes"));
    writeFileSync(path.join(dir, ".notes", "a.txt"), "notes");
    mkdirSync(path.join(dir, ".git"));
    writeFileSync(path.join(dir, ".git", "HEAD"), "ref: refs/heads/main\n");
    const r = await pushToHub({ dir, repo: "team/hidden", token: TOKEN, hubUrl: hub.hubUrl, includeHidden: true });
    const repo = hub.repos.get("team/hidden")!;
    expect(repo.files.get(".gitattributes")!.toString()).toBe("*.safetensors filter=lfs\n");
    expect(repo.files.get(".notes/a.txt")!.toString()).toBe("notes");
    expect([...repo.files.keys()].some((f) => f.startsWith(".git/"))).toBe(false);
    expect(r.skipped).toEqual([{ path: ".git", reason: "git-or-cache" }]);
  });

  it("pushes a Hugging Face cache snapshot, whose files are links into the repository's blobs, and nothing its links reach beyond them", async () => {
    const cache = mkdtempSync(path.join(tmpdir(), "pbrl-pushcache-"));
    const repoDir = path.join(cache, "models--org--tiny");
    const snapshot = path.join(repoDir, "snapshots", "0123456789abcdef0123456789abcdef01234567");
    mkdirSync(path.join(repoDir, "blobs"), { recursive: true });
    mkdirSync(snapshot, { recursive: true });
    const tiny = path.join(FIXTURES, "tiny-llama");
    const names = ["config.json", "model.safetensors", "tokenizer.json"];
    for (const [i, f] of names.entries()) {
      cpSync(path.join(tiny, f), path.join(repoDir, "blobs", `blob${i}`));
      symlinkSync(path.join("..", "..", "blobs", `blob${i}`), path.join(snapshot, f));
    }
    // Beside the cache's repository folder, but not in its blobs: left out.
    writeFileSync(path.join(cache, "elsewhere.txt"), "NOT-IN-BLOBS-5120");
    symlinkSync(path.join("..", "..", "..", "elsewhere.txt"), path.join(snapshot, "notes.txt"));
    const r = await pushToHub({ dir: snapshot, repo: "team/from-cache", token: TOKEN, hubUrl: hub.hubUrl });
    const repo = hub.repos.get("team/from-cache")!;
    expect(r.files).toEqual([...names, "README.md"].sort());
    for (const f of names) expect(repo.files.get(f)!.equals(readFileSync(path.join(tiny, f))), f).toBe(true);
    expect(r.skipped).toEqual([{ path: "notes.txt", reason: "link-outside", target: path.join(realpathSync(cache), "elsewhere.txt") }]);
    expect(sent().includes("NOT-IN-BLOBS-5120")).toBe(false);
  });

  it("refuses a repository id that names a path (org/..), before any request", async () => {
    const dir = runFolder();
    for (const repo of ["org/..", "org/.hidden", "../name", "org/a--b", "org/name.git"]) {
      await expect(pushToHub({ dir, repo, token: TOKEN, hubUrl: hub.hubUrl }), repo).rejects.toThrow(
        new RegExp(
          `^--repo must be a hub repository id of the form "org/name", got ${JSON.stringify(repo).replace(/[.*+?^$()[\]{}|\\]/g, "\\$&")}: each part is letters, digits`,
        ),
      );
    }
    expect(hub.requests).toEqual([]);
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
