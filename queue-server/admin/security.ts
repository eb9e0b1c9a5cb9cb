/**
 * The admin page's browser-facing defences, in one place:
 *  - response headers: a strict Content-Security-Policy (scripts, styles and connections from this
 *    origin only, no inline script or style, no framing, no plugins), X-Frame-Options, Referrer-Policy,
 *    nosniff, cross-origin isolation (COOP same-origin, COEP require-corp, CORP same-origin: the page
 *    loads only its own resources, uPlot included, so it needs no cross-origin embedding, and no other
 *    origin may embed or read ours), and, over TLS, Strict-Transport-Security (no includeSubDomains:
 *    the queue server speaks for its own host name only);
 *  - the same-origin check every POST passes (Origin, else Sec-Fetch-Site), beside the SameSite=Strict
 *    cookie and the CSRF token (routes.ts);
 *  - the session cookie: HttpOnly, SameSite=Strict, Path=/admin, Secure when the request came over TLS,
 *    no Max-Age (gone when the browser closes).
 */
import type { NextFunction, Request, Response } from 'express';
import { HttpError } from '../api/http-errors.js';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** One year: browsers that saw the admin page over HTTPS use HTTPS for this host from then on. */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

export function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  res.set({
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
    'Origin-Agent-Cluster': '?1',
    'X-Permitted-Cross-Domain-Policies': 'none',
    'X-DNS-Prefetch-Control': 'off',
  });
  if (req.secure) res.set('Strict-Transport-Security', STRICT_TRANSPORT_SECURITY);
  next();
}

/**
 * Refuses a request a browser sent from another origin. Browsers send `Origin` with every POST
 * (fetch and form alike); its host must be the host the request was sent to. A form posted from a
 * page with `Referrer-Policy: no-referrer` (ours) carries `Origin: null`, and so does one from a
 * sandboxed or opaque origin: then, as when `Origin` is missing, `Sec-Fetch-Site` (which scripts
 * cannot set) must say same-origin. A request with neither is refused: programs use the bearer-token
 * API instead.
 */
export function requireSameOrigin(req: Request, _res: Response, next: NextFunction): void {
  const host = req.headers.host;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    if (host === undefined || hostOf(origin) !== host.toLowerCase()) {
      return next(new HttpError(403, 'cross-origin', `cross-origin request refused: Origin ${origin.slice(0, 100)} is not this server`));
    }
    return next();
  }
  if (req.headers['sec-fetch-site'] === 'same-origin') return next();
  const why = origin === undefined ? 'no Origin header' : 'Origin null';
  next(new HttpError(403, 'cross-origin', `cross-origin request refused: ${why} and no Sec-Fetch-Site: same-origin (programs use the bearer-token API)`));
}

function hostOf(origin: string): string | null {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : null;
  } catch {
    return null;
  }
}

export const SESSION_COOKIE = 'petrel_admin';
export const COOKIE_PATH = '/admin';

/** The value of one cookie from a Cookie header; undefined when absent. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie. Without Max-Age it lives until the browser closes; the server forgets the
 * session after its idle time (sessions.ts), and an open page's live stream counts as use.
 */
export function sessionCookie(value: string, options: { secure: boolean; maxAgeSeconds?: number }): string {
  const attributes = [`${SESSION_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict'];
  if (options.maxAgeSeconds !== undefined) attributes.push(`Max-Age=${options.maxAgeSeconds}`);
  if (options.secure) attributes.push('Secure');
  return attributes.join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', { secure, maxAgeSeconds: 0 });
}
