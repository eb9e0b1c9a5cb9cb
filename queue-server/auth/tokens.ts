/**
 * The secrets (fetcher.token, admin.token) and the bearer-token check of the status and control API,
 * which takes admin.token only. Tokens are compared in constant time (over their SHA-256 digests, so
 * their lengths leak nothing either). fetcher.token is never a bearer token anywhere: it is the key
 * of request signatures (shared/request-signing.ts, api/request-auth.ts) and never crosses the wire.
 * Both are 256 random bits, which is what protects them from guessing (app.ts says why the bearer
 * routes do not lock an address out).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { createFileDurably } from '../storage/atomic-file.js';
import type { FileOps } from '../storage/file-ops.js';

export function tokensEqual(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function bearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization);
  return match === null ? null : match[1]!;
}

/**
 * Reads a token file, or creates it (mode 0600, 256 random bits) when missing: fsynced with its
 * directory entry, so that fetchers given the token never meet a queue server that lost it in a crash.
 */
export function loadOrCreateToken(path: string, io?: FileOps): string {
  if (existsSync(path)) return readTokenFile(path);
  const token = randomBytes(32).toString('base64url');
  createFileDurably(path, `${token}\n`, { mode: 0o600, io });
  chmodSync(path, 0o600);
  return token;
}

/** What a token is, wherever one is read: one line of 16-512 printable ASCII characters. */
export function isWellFormedToken(token: string): boolean {
  return /^[\x21-\x7e]{16,512}$/.test(token);
}

export function readTokenFile(path: string): string {
  const token = readFileSync(path, 'utf8').trim();
  if (!isWellFormedToken(token)) {
    throw new Error(`token file ${path} must hold one token of 16-512 printable characters`);
  }
  return token;
}
