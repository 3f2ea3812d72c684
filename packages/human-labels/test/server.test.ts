import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LabelRound, RESTART_MESSAGE, labelFilePath, seededOrder, startLabelServer, type LabelServer } from "../src/index.js";
import { isLoopback } from "../src/http-guard.js";
import { APP_JS } from "../src/page/app-js.js";
import { APP_CSS } from "../src/page/app-css.js";
import { indexHtml } from "../src/page/index-html.js";
import { comparisons, tempDir } from "./helpers.js";

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const servers: LabelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function setup(n = 3) {
  const dir = tempDir();
  const round = await LabelRound.open({ dir, round: 1, comparisons: comparisons(n), leftIsTarget: seededOrder(5) });
  const server = await startLabelServer({ round: () => round, status: () => ({ run: "demo", round: 1, evalCurve: [{ round: 1, value: 0.25 }] }) });
  servers.push(server);
  const base = `http://127.0.0.1:${server.port}`;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(base + path, { ...init, headers: { "X-Pbrl-Token": server.token, ...(init.headers as Record<string, string>) } });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    api(path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "Content-Type": "application/json", ...headers } });
  const next = async (annotator: string) =>
    (await (await api(`/api/next?annotator=${encodeURIComponent(annotator)}`)).json()) as {
      leaseId: string;
      left: string[];
      comparisonId: string;
      done: boolean;
    };
  return { dir, round, server, base, api, post, next, file: labelFilePath(dir, 1) };
}

function fileLines(file: string): unknown[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as unknown);
  } catch {
    return [];
  }
}

describe("label server", () => {
  it("prints a loopback link with a fresh 32-byte token and no warning", async () => {
    const { server } = await setup();
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
    expect(Buffer.from(server.token, "base64url")).toHaveLength(32);
    expect(server.warning).toBeUndefined();
    expect((await fetch(server.url)).status).toBe(200);
  });

  it("answers 401 without the token and 403 with a wrong one, for the page, its assets and the API", async () => {
    const { base } = await setup();
    for (const path of ["/", "/app.js", "/app.css", "/nowhere"]) {
      expect((await fetch(base + path)).status, path).toBe(401);
      expect((await fetch(`${base}${path}?token=wrong-token-0000000`)).status, path).toBe(403);
    }
    for (const path of ["/api/status", "/api/next?annotator=ada"]) {
      expect((await fetch(base + path)).status, path).toBe(401);
      // the query is not a way in for the API: it needs the header
      const r = await fetch(base + path, { headers: { "X-Pbrl-Token": "wrong-token-0000000" } });
      expect(r.status, path).toBe(403);
      expect(await r.json()).toEqual({ error: RESTART_MESSAGE });
    }
    const post = await fetch(`${base}/api/label`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    expect(post.status).toBe(401);
  });

  it("serves the page with the security headers and nothing to load from elsewhere", async () => {
    const { server, base } = await setup();
    for (const path of ["/", "/app.js", "/app.css"]) {
      const r = await fetch(`${base}${path}?token=${server.token}`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-security-policy")).toBe(CSP);
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
      const text = await r.text();
      expect(text).not.toMatch(/https?:\/\//);
      if (path === "/") expect(text).toContain(`/app.js?token=${server.token}`);
    }
    expect((await fetch(`${base}/api/status`)).headers.get("content-security-policy")).toBe(CSP);
    for (const text of [indexHtml("t".repeat(20)), APP_JS, APP_CSS])
      expect(text).not.toMatch(/https?:\/\/|innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it("refuses cross-site writes: another Origin, a cross-site fetch, a body that is not JSON", async () => {
    const { post, next, file, api } = await setup();
    const lease = await next("ada");
    const body = { leaseId: lease.leaseId, annotator: "ada", verdict: "left" };
    const refused: Record<string, string>[] = [
      { Origin: "http://evil.example" },
      { Origin: "null" },
      { "Sec-Fetch-Site": "cross-site" },
      { "Sec-Fetch-Site": "same-site" },
    ];
    for (const headers of refused) {
      const r = await post("/api/label", body, headers);
      expect(r.status, JSON.stringify(headers)).toBe(403);
    }
    const plain = await api("/api/label", { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "text/plain" } });
    expect(plain.status).toBe(403);
    const form = await api("/api/skip", { method: "POST", body: "leaseId=x", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    expect(form.status).toBe(403);
    expect(fileLines(file)).toEqual([]);
  });

  it("accepts a same-origin write and answers saved only once the record is in the file", async () => {
    const { post, next, file, base, round } = await setup();
    const lease = await next("ada");
    const r = await post(
      "/api/label",
      { leaseId: lease.leaseId, annotator: "ada", verdict: "left", rationale: "clearer" },
      { Origin: base, "Sec-Fetch-Site": "same-origin" },
    );
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ saved: true });
    const lines = fileLines(file); // read right after the reply
    const leftIs = seededOrder(5)(lease.comparisonId) ? "target" : "comparator";
    expect(lines).toEqual([
      expect.objectContaining({
        comparison_id: lease.comparisonId,
        annotator: "ada",
        verdict: leftIs,
        winner: leftIs,
        shown_left: leftIs,
        rationale: "clearer",
        scorer: "human",
      }),
    ]);
    expect(round.progress().labels).toBe(1);
  });

  it("answers a flood of picks for one lease with one save and conflicts", async () => {
    const { post, next, file } = await setup();
    const lease = await next("ada");
    const replies = await Promise.all(Array.from({ length: 12 }, () => post("/api/label", { leaseId: lease.leaseId, annotator: "ada", verdict: "right" })));
    expect(replies.map((r) => r.status).sort()).toEqual([200, ...Array<number>(11).fill(409)]);
    expect(fileLines(file)).toHaveLength(1);
    const foreign = await next("bo");
    expect((await post("/api/label", { leaseId: foreign.leaseId, annotator: "ada", verdict: "tie" })).status).toBe(409);
  });

  it("answers 413 to a huge body and 400 to bodies that are not a pick", async () => {
    const { post, next } = await setup();
    const huge = await post("/api/label", { leaseId: "x", annotator: "ada", verdict: "left", rationale: "x".repeat(100 * 1024) });
    expect(huge.status).toBe(413);
    const lease = await next("ada");
    for (const body of ["{not json", { leaseId: lease.leaseId, annotator: "ada", verdict: "better" }, { leaseId: lease.leaseId, verdict: "left" }, [1, 2]]) {
      const r = await post("/api/label", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(((await r.json()) as { error: string }).error.length).toBeGreaterThan(0);
    }
    expect((await post("/api/label", { leaseId: lease.leaseId, annotator: " ", verdict: "left" })).status).toBe(400);
  });

  it("hands out leases blind, skips, and says done when the round is labelled", async () => {
    const { post, next, api } = await setup(2);
    const a = await next("ada");
    expect(Object.keys(a).sort()).toEqual([
      "comparisonId",
      "done",
      "expiresAt",
      "itemId",
      "itemIndex",
      "leaseId",
      "left",
      "prompts",
      "right",
      "roles",
      "round",
    ]);
    expect(await (await post("/api/skip", { leaseId: a.leaseId })).json()).toEqual({ skipped: true });
    const b = await next("ada");
    expect(b.comparisonId).not.toBe(a.comparisonId);
    expect((await post("/api/label", { leaseId: b.leaseId, annotator: "ada", verdict: "tie" })).status).toBe(200);
    const c = await next("ada");
    expect((await post("/api/label", { leaseId: c.leaseId, annotator: "ada", verdict: "both_bad" })).status).toBe(200);
    expect(await next("ada")).toEqual({ done: true });
    expect((await api("/api/next")).status).toBe(400);
    const status = await (await api("/api/status")).json();
    expect(status).toEqual({
      run: "demo",
      round: 1,
      evalCurve: [{ round: 1, value: 0.25 }],
      progress: { total: 2, decided: 2, labels: 2, inFlight: 0 },
      agreement: { comparisons: 0, mean: null },
    });
  });

  it("says finished in /api/next and /api/status once the run's status does, and only then", async () => {
    let finished = false;
    const server = await startLabelServer({ round: () => null, status: () => ({ run: "demo", ...(finished && { finished: true }) }) });
    servers.push(server);
    const get = async (path: string) => (await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { "X-Pbrl-Token": server.token } })).json();
    expect(await get("/api/next?annotator=ada")).toEqual({ done: true });
    expect(await get("/api/status")).toEqual({ run: "demo", progress: null, agreement: null });
    finished = true;
    expect(await get("/api/next?annotator=ada")).toEqual({ done: true, finished: true });
    expect(await get("/api/status")).toEqual({ run: "demo", finished: true, progress: null, agreement: null });
  });

  it("tells a page left open across a restart to open the new link", async () => {
    const first = await setup();
    const oldToken = first.server.token;
    const lease = await first.next("ada");
    await first.server.close();
    servers.splice(servers.indexOf(first.server), 1);
    const second = await setup();
    const r = await fetch(`${second.base}/api/label`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Pbrl-Token": oldToken },
      body: JSON.stringify({ leaseId: lease.leaseId, annotator: "ada", verdict: "left" }),
    });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ error: RESTART_MESSAGE });
    const page = await fetch(`${second.base}/?token=${oldToken}`);
    expect(page.status).toBe(403);
    expect(await page.text()).toContain(RESTART_MESSAGE);
  });

  it("knows which hosts are loopback, and refuses a token that could not go in a URL", async () => {
    for (const h of ["127.0.0.1", "127.4.5.6", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]) expect(isLoopback(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "192.168.1.2", "example.com", "10.0.0.1"]) expect(isLoopback(h), h).toBe(false);
    await expect(startLabelServer({ round: () => null, token: 'x"><script>' })).rejects.toThrow(RangeError);
  });

  it("serves on ::1 with a bracketed link", async () => {
    const server = await startLabelServer({ host: "::1", round: () => null, token: "a-given-token-of-20c" }).catch(() => null);
    if (server === null) return; // no IPv6 loopback on this machine
    servers.push(server);
    expect(server.url).toBe(`http://[::1]:${server.port}/?token=a-given-token-of-20c`);
    const r = await fetch(`http://[::1]:${server.port}/api/next?annotator=ada`, { headers: { "X-Pbrl-Token": "a-given-token-of-20c" } });
    expect(await r.json()).toEqual({ done: true });
  });

  it("ships a page script that parses", () => {
    expect(() => new Function(APP_JS)).not.toThrow();
  });

  it("close() answers a request that reached it while training held the thread, and no idle keep-alive socket keeps it open", async () => {
    const { round } = await setup();
    const server = await startLabelServer({ round: () => round });
    // a page's earlier fetch leaves a keep-alive socket open (the server keeps idle sockets 10 minutes)
    expect((await fetch(`http://127.0.0.1:${server.port}/api/status`, { headers: { "X-Pbrl-Token": server.token } })).status).toBe(200);
    const raw = await rawConnection(server.port);
    raw.socket.write(`GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pbrl-Token: ${server.token}\r\n\r\n`);
    const busy = Date.now() + 50;
    while (Date.now() < busy); // the request waits, unread, while the thread trains
    const started = Date.now();
    await server.close();
    await raw.ended;
    expect(raw.got.problems).toEqual([]);
    expect(raw.got.reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(raw.got.reply).toMatch(/\r\nconnection: close\r\n/i);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("close() lets a pick that is being received finish and be saved, then ends its connection", async () => {
    const { round, file } = await setup();
    const server = await startLabelServer({ round: () => round });
    const lease = round.next("ana")!;
    const body = JSON.stringify({ leaseId: lease.leaseId, annotator: "ana", verdict: "left" });
    const raw = await rawConnection(server.port);
    raw.socket.write(
      `POST /api/label HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pbrl-Token: ${server.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, 50)); // its headers are in: the server waits for the body
    const started = Date.now();
    const closed = server.close();
    await new Promise((r) => setTimeout(r, 20));
    raw.socket.write(body.slice(5));
    await closed;
    await raw.ended;
    expect(raw.got.problems).toEqual([]);
    expect(raw.got.reply).toMatch(/^HTTP\/1\.1 200 [^]*\{"saved":true\}$/);
    expect(fileLines(file)).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("close() cuts a request that never finishes after 2 s, so the run does not wait on it", async () => {
    const { round } = await setup();
    const server = await startLabelServer({ round: () => round });
    const raw = await rawConnection(server.port);
    raw.socket.write(
      `POST /api/label HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pbrl-Token: ${server.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
    );
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    await server.close();
    await raw.ended;
    expect(raw.got.reply).toBe("");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  });
});

/** A raw HTTP/1.1 connection, accepted by the server: to send a request in parts, or while the thread is busy. */
async function rawConnection(port: number) {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  await new Promise((r) => setTimeout(r, 20));
  const got = { reply: "", problems: [] as string[] };
  socket.on("data", (d: Buffer) => (got.reply += d.toString("latin1")));
  socket.on("error", (e) => got.problems.push(e.message));
  const ended = new Promise<void>((r) => socket.on("close", () => r()));
  return { socket, got, ended };
}
