/**
 * The labelling page and its API on `node:http`, bound to loopback by default. Routes, checks
 * and replies live here; the rules for each check are in http-guard.ts. A pick is answered
 * `{saved: true}` only after LabelRound.submit resolved, which is after the fsync.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AnnotatorSchema, issues, LabelBodySchema, SkipBodySchema } from "./api-schemas.js";
import { LabelConflictError } from "./errors.js";
import { checkToken, crossSiteRefusal, isLoopback, newToken, RESTART_MESSAGE, send, sendJson, TOKEN_HEADER, tokenStatus, urlHost } from "./http-guard.js";
import type { LabelProgress, LabelRound } from "./label-queue.js";
import { APP_CSS } from "./page/app-css.js";
import { APP_JS } from "./page/app-js.js";
import { indexHtml } from "./page/index-html.js";
import { readJsonBody } from "./request-body.js";

export interface EvalPoint {
  round: number;
  value: number;
}

/** What the page's header shows about the run. */
export interface LabelRunStatus {
  run?: string;
  round?: number;
  evalCurve?: EvalPoint[];
  /** True once the run opens no more rounds: /api/next says so too, and the page stops asking. */
  finished?: boolean;
}

export interface LabelServerOptions {
  /** Default 127.0.0.1. Anything but loopback puts the page on the network with only the token to guard it. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** The round being labelled now, or null between rounds. */
  round: () => LabelRound | null;
  status?: () => LabelRunStatus;
  /** Default: 32 random bytes, base64url. */
  token?: string;
  /** Called with the warning when `host` is not a loopback address (it is also returned). */
  onWarning?: (warning: string) => void;
}

export interface LabelServer {
  /** `http://HOST:PORT/?token=…`: the link to print for people. */
  url: string;
  token: string;
  port: number;
  /** Set when the server listens beyond loopback. */
  warning?: string;
  close(): Promise<void>;
}

/** The status the page polls: the run's, plus the round's progress and agreement so far. */
export interface LabelStatusReply extends LabelRunStatus {
  progress: LabelProgress | null;
  /** Mean share of agreeing labels over the comparisons with two labels or more. */
  agreement: { comparisons: number; mean: number | null } | null;
}

/** How long close() lets answers being sent finish before it cuts their connections. */
const CLOSE_GRACE_MS = 2000;

export async function startLabelServer(options: LabelServerOptions): Promise<LabelServer> {
  const host = options.host ?? "127.0.0.1";
  const token = checkToken(options.token ?? newToken());
  let origin = "";
  const html = indexHtml(token);

  let closing = false;
  const server = createServer((req, res) => {
    // once closing, each answer ends its connection: an idle keep-alive socket would hold close() open
    if (closing) res.setHeader("Connection", "close");
    res.on("finish", () => closing && server.closeIdleConnections());
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: `internal error: ${(e as Error).message}` });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const api = url.pathname.startsWith("/api/");
    const denied = tokenStatus(api ? headerValue(req.headers[TOKEN_HEADER]) : url.searchParams.get("token"), token);
    if (denied !== null) {
      if (api) return sendJson(res, denied, { error: RESTART_MESSAGE });
      return send(res, denied, `${RESTART_MESSAGE}\n`, "text/plain; charset=utf-8");
    }
    const route = `${req.method ?? "GET"} ${url.pathname}`;
    switch (route) {
      case "GET /":
        return send(res, 200, html, "text/html; charset=utf-8");
      case "GET /app.js":
        return send(res, 200, APP_JS, "text/javascript; charset=utf-8");
      case "GET /app.css":
        return send(res, 200, APP_CSS, "text/css; charset=utf-8");
      case "GET /api/next":
        return next(url, res);
      case "GET /api/status":
        return sendJson(res, 200, statusReply());
      case "POST /api/label":
      case "POST /api/skip":
        return write(req, res, url.pathname === "/api/label" ? label : skip);
    }
    if (["/", "/app.js", "/app.css", "/api/next", "/api/status", "/api/label", "/api/skip"].includes(url.pathname))
      return sendJson(res, 405, { error: `${req.method ?? "?"} is not allowed on ${url.pathname}` });
    return sendJson(res, 404, { error: `no such path: ${url.pathname}` });
  }

  function next(url: URL, res: ServerResponse): void {
    const name = AnnotatorSchema.safeParse(url.searchParams.get("annotator") ?? "");
    if (!name.success) return sendJson(res, 400, { error: issues(name.error) });
    const lease = options.round()?.next(name.data) ?? null;
    if (lease === null) return sendJson(res, 200, options.status?.().finished === true ? { done: true, finished: true } : { done: true });
    const { comparison: c } = lease;
    // neither the comparison's target/comparator fields nor `leftIs`: the person judges blind
    sendJson(res, 200, {
      done: false,
      leaseId: lease.leaseId,
      comparisonId: c.id,
      round: c.round,
      itemIndex: c.itemIndex,
      itemId: c.itemId ?? null,
      prompts: c.prompts,
      roles: c.roles,
      left: lease.left,
      right: lease.right,
      expiresAt: new Date(lease.expiresAt).toISOString(),
    });
  }

  async function write(req: IncomingMessage, res: ServerResponse, act: (body: unknown, res: ServerResponse) => Promise<void>): Promise<void> {
    const refusal = crossSiteRefusal(req, origin);
    if (refusal !== null) {
      req.resume();
      return sendJson(res, 403, { error: refusal });
    }
    const body = await readJsonBody(req);
    if (!body.ok) return sendJson(res, body.status, { error: body.message }, body.status === 413 ? { Connection: "close" } : {});
    await act(body.value, res);
  }

  async function label(value: unknown, res: ServerResponse): Promise<void> {
    const parsed = LabelBodySchema.safeParse(value);
    if (!parsed.success) return sendJson(res, 400, { error: issues(parsed.error) });
    const round = options.round();
    if (round === null) return sendJson(res, 409, { error: "no round is being labelled now", reason: "no_round" });
    const { leaseId, annotator, verdict, rationale } = parsed.data;
    try {
      await round.submit(leaseId, annotator, verdict, rationale ?? null);
    } catch (e) {
      if (e instanceof LabelConflictError) return sendJson(res, 409, { error: e.message, reason: e.reason });
      throw e;
    }
    sendJson(res, 200, { saved: true });
  }

  async function skip(value: unknown, res: ServerResponse): Promise<void> {
    const parsed = SkipBodySchema.safeParse(value);
    if (!parsed.success) return sendJson(res, 400, { error: issues(parsed.error) });
    sendJson(res, 200, { skipped: options.round()?.skip(parsed.data.leaseId) ?? false });
  }

  function statusReply(): LabelStatusReply {
    const round = options.round();
    const reply: LabelStatusReply = { ...(options.status?.() ?? {}), progress: round?.progress() ?? null, agreement: null };
    if (round !== null) {
      const multi = round.outcome().filter((o) => o.labels >= 2);
      reply.agreement = { comparisons: multi.length, mean: multi.length === 0 ? null : multi.reduce((s, o) => s + (o.agreement ?? 0), 0) / multi.length };
    }
    return reply;
  }

  // Training blocks this thread for seconds at a time; a keep-alive socket whose idle timer fires
  // late, just as the page reuses it, would drop that request. Idle sockets are the client's to close.
  server.keepAliveTimeout = 10 * 60 * 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  origin = `http://${urlHost(host)}:${port}`;
  const result: LabelServer = {
    url: `${origin}/?token=${token}`,
    token,
    port,
    close: async () => {
      closing = true;
      // A request sent while training held the thread lies unread in its socket; closing that
      // socket now would reset it. Two turns of the event loop read it (one poll phase between).
      for (let turn = 0; turn < 2; turn++) await new Promise((r) => setImmediate(r));
      await new Promise<void>((resolve, reject) => {
        // A client that stops reading its answer does not hold the run open.
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        server.close((e) => {
          clearTimeout(cut);
          if (e === undefined) resolve();
          else reject(e);
        });
      });
    },
  };
  if (!isLoopback(host)) {
    result.warning = `the labelling page listens on ${host}, beyond loopback: anyone who can reach ${origin} and learns the token can label; the token is the only lock`;
    options.onWarning?.(result.warning);
  }
  return result;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
