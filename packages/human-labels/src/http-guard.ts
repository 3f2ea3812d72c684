/**
 * The checks every request passes before it reaches the queue. The page is served on loopback,
 * but any web page the annotator has open can send requests to loopback ports, so: the token on
 * every request (unguessable, printed only to whoever started the run), and for writes the proofs
 * a browser gives that the request came from this page itself — a JSON content type (which a
 * cross-site form cannot send without a CORS preflight this server never answers), its Origin and
 * Sec-Fetch-Site.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "node:net";

export const TOKEN_HEADER = "x-pbrl-token";
export const RESTART_MESSAGE = "the run restarted or the token is wrong: open the link the run printed";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "no-store",
  "Referrer-Policy": "no-referrer",
};

export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Tokens go into a URL and the page's HTML, so only URL-safe characters are accepted. */
export function checkToken(token: string): string {
  if (!/^[A-Za-z0-9_-]{16,512}$/.test(token)) throw new RangeError("token must be 16 to 512 characters of A-Z, a-z, 0-9, '-' and '_'");
  return token;
}

/** Compares digests, so neither the length nor any prefix of the token leaks through timing. */
export function tokenMatches(given: string, token: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(token).digest();
  return timingSafeEqual(a, b);
}

/** 401 without a token, 403 with a wrong one, null when it matches. */
export function tokenStatus(given: string | null | undefined, token: string): 401 | 403 | null {
  if (given === null || given === undefined || given === "") return 401;
  return tokenMatches(given, token) ? null : 403;
}

/** Why a write is refused as cross-site, or null when it may go on. */
export function crossSiteRefusal(req: IncomingMessage, origin: string): string | null {
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") return "a write must be sent as Content-Type: application/json";
  const from = req.headers["origin"];
  if (from !== undefined && from !== origin) return `a write from origin ${from} is refused; this page's origin is ${origin}`;
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") return `a write from a ${site} page is refused`;
  return null;
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h);
  return false;
}

/** `host` as it goes into a URL: IPv6 addresses in brackets. */
export function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

export function send(res: ServerResponse, status: number, body: string, contentType: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "Content-Type": contentType, "Content-Length": String(Buffer.byteLength(body)), ...extra });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void {
  send(res, status, JSON.stringify(value), "application/json; charset=utf-8", extra);
}
