// `pbrl push` uploads every file of a checkpoint to a hub (a loopback double here): the server
// ends up with each file's bytes, a model card is added when the folder has none, and the token
// from HF_TOKEN is sent to the hub only: never printed, never written, never sent to the CDN.
import { cpSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { hubProgressPrinter, onHubProgress } from "@pbrl/models";
import { PUSH_HELP, pushCommand } from "../src/commands/push.js";
import type { CliIO } from "../src/io.js";
import { TINY_LLAMA, useHubDouble } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;
const TOKEN = "hf_push_secret_9f3c2e";
const hub = useHubDouble(TOKEN);

async function push(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const io: CliIO = { out: (t) => void (out += t), err: (t) => void (err += t), isTTY: false };
  // main() prints hub progress on stderr for every command, as here
  const stop = onHubProgress(hubProgressPrinter(io.err, { isTTY: false }));
  try {
    const code = await pushCommand(argv, io);
    return { code, out, err };
  } finally {
    stop();
  }
}

function workspace(): { root: string; model: string } {
  const root = mkdtempSync(path.join(tmpdir(), "pbrl-push-"));
  const model = path.join(root, "agent_0");
  cpSync(TINY, model, { recursive: true });
  process.env["HF_ENDPOINT"] = hub.hubUrl;
  process.env["HF_TOKEN"] = TOKEN;
  process.env["HF_HOME"] = path.join(root, "hf-home");
  delete process.env["HF_HUB_OFFLINE"];
  return { root, model };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

describe("pbrl push", () => {
  it("uploads every file of the checkpoint, adds a model card, and keeps the token secret", async () => {
    const { root, model } = workspace();
    const before = Object.fromEntries(readdirSync(model).map((f) => [f, readFileSync(path.join(model, f))]));
    const r = await push(["--model", model, "--repo", "acme/agent", "--private", "--message", "MADPO round 3"]);
    expect(r.code).toBe(0);
    const repo = hub.repos.get("acme/agent")!;
    expect(r.out).toBe(`pbrl: pushed 6 files to ${hub.hubUrl}/acme/agent (commit ${repo.commit}); created private repository, generated README.md\n`);
    expect(r.err).toMatch(/pbrl: uploaded acme\/agent: .* in 6 files\n/);
    // Every file's bytes reached the server; the weights went through LFS to the CDN.
    expect(repo.private).toBe(true);
    expect([...repo.files.keys()].sort()).toEqual([...Object.keys(before), "README.md"].sort());
    for (const [f, bytes] of Object.entries(before)) expect(repo.files.get(f)!.equals(bytes)).toBe(true);
    expect(hub.requests.some((q) => q.origin === "cdn" && q.method === "PUT" && q.body.equals(before["model.safetensors"]!))).toBe(true);
    const card = repo.files.get("README.md")!.toString();
    expect(card).toMatch(/^---\n[\s\S]*tags:\n- pbrl\n[\s\S]*---\n\n# acme\/agent\n/);
    expect(card).toMatch(/trained with pbrl/);
    expect(card).toMatch(/Architecture: LlamaForCausalLM \(llama\)/);
    const commit = hub.requests.find((q) => q.url === "/api/models/acme/agent/commit/main")!;
    expect(JSON.parse(commit.body.toString().split("\n")[0]!)).toMatchObject({ key: "header", value: { summary: "MADPO round 3" } });
    // The token: on the hub's requests only; in no output, no file, no CDN request, no body.
    expect(hub.requests.filter((q) => q.origin === "hub").every((q) => q.auth === `Bearer ${TOKEN}`)).toBe(true);
    expect(hub.requests.filter((q) => q.origin === "cdn").every((q) => q.auth === undefined)).toBe(true);
    expect(hub.requests.some((q) => q.body.includes(TOKEN))).toBe(false);
    expect(r.out + r.err).not.toContain(TOKEN);
    for (const f of filesUnder(root)) expect(readFileSync(f).includes(TOKEN)).toBe(false);
    // The folder is as it was: the card went up from memory.
    expect(readdirSync(model).sort()).toEqual(Object.keys(before).sort());
  });

  it("pushes again to the existing repository, keeping the folder's own README.md", async () => {
    const { model } = workspace();
    writeFileSync(path.join(model, "README.md"), "# my card\n");
    const r = await push(["--model", model, "--repo", "acme/again", "--base_model", "meta/base"]);
    expect(r.code).toBe(0);
    const puts = () => hub.requests.filter((q) => q.origin === "cdn" && q.method === "PUT").length;
    const uploaded = puts();
    const second = await push(["--model", model, "--repo", "acme/again"]);
    expect(second.out).toMatch(/pushed 6 files to .*acme\/again .*; existing repository\n$/);
    expect(hub.repos.get("acme/again")!.files.get("README.md")!.toString()).toBe("# my card\n");
    // The weights are not uploaded again: the LFS batch answer says the hub has them.
    expect(puts()).toBe(uploaded);
  });

  it("says what to fix: no token, a wrong token, a bad repository id, a missing folder", async () => {
    const { model } = workspace();
    delete process.env["HF_TOKEN"];
    await expect(push(["--model", model, "--repo", "acme/x"])).rejects.toThrow(/needs a token with write access: set HF_TOKEN/);
    process.env["HF_TOKEN"] = "hf_wrong_token_1234";
    const wrong = push(["--model", model, "--repo", "acme/x"]);
    await expect(wrong).rejects.toThrow(/refused the upload to acme\/x \(HTTP 401\): HF_TOKEN must be a token with write access to acme/);
    await expect(wrong).rejects.not.toThrow(/hf_wrong_token_1234/);
    process.env["HF_TOKEN"] = TOKEN;
    await expect(push(["--model", model, "--repo", "not-an-id"])).rejects.toThrow(/--repo must be a hub repository id of the form "org\/name"/);
    await expect(push(["--model", path.join(model, "nope"), "--repo", "acme/x"])).rejects.toThrow(/nope is not a folder/);
    // An id that names a path rather than a repository: refused before any request, saying what an id is.
    const requestsBefore = hub.requests.length;
    for (const id of ["acme/..", "acme/.hidden", "../acme", "acme/a--b", "acme/x.git"]) {
      await expect(push(["--model", model, "--repo", id]), id).rejects.toThrow(
        `--repo must be a hub repository id of the form "org/name", got ${JSON.stringify(id)}: each part is letters, digits, "_", "-" and ".", begins and ends with a letter, digit or "_", has no ".." or "--", does not end in ".git"`,
      );
    }
    expect(hub.requests.length).toBe(requestsBefore);
    await expect(push(["--repo", "acme/x"])).rejects.toThrow(/--model is required/);
    expect(hub.repos.has("acme/x")).toBe(false);
  });

  it("uploads only what the folder holds: hidden files with --include-hidden only, never a link out of it; prints what it left out", async () => {
    const { root, model } = workspace();
    writeFileSync(path.join(root, "outside.txt"), "OUTSIDE-FILE-8841");
    symlinkSync(path.join(root, "outside.txt"), path.join(model, "notes.txt"));
    writeFileSync(path.join(model, ".env"), "HF_TOKEN=DOTENV-SECRET-7712\n");
    const r = await push(["--model", model, "--repo", "acme/inside"]);
    expect(r.code).toBe(0);
    expect(r.out.split("\n").slice(0, 2)).toEqual([
      "pbrl: not uploaded: .env: hidden (--include-hidden / includeHidden uploads it)",
      `pbrl: not uploaded: notes.txt: a symlink to ${realpathSync(path.join(root, "outside.txt"))}, outside the folder (copy the file in to upload it)`,
    ]);
    expect(r.out).toMatch(/pbrl: pushed 6 files to /);
    const repo = hub.repos.get("acme/inside")!;
    expect([...repo.files.keys()].sort()).toEqual([
      "README.md",
      "config.json",
      "generation_config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(hub.requests.some((q) => q.body.includes("DOTENV-SECRET-7712") || q.body.includes("OUTSIDE-FILE-8841"))).toBe(false);

    const again = await push(["--model", model, "--repo", "acme/inside", "--include-hidden"]);
    expect(again.out).not.toContain(".env:");
    expect(again.out).toContain("pbrl: not uploaded: notes.txt: a symlink to");
    expect(repo.files.get(".env")!.toString()).toBe("HF_TOKEN=DOTENV-SECRET-7712\n");
    expect(PUSH_HELP).toMatch(/--include-hidden +upload hidden files and folders too/);
  });
});
