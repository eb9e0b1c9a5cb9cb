/**
 * Admin page sessions: who logged in with the admin token, kept in memory by the queue server.
 *
 *   cookie value   32 random bytes, base64url: the only copy is in the browser's HttpOnly cookie
 *   map key        SHA-256 of the cookie value, so the map (or a heap dump) cannot be replayed as a cookie
 *   csrfToken      32 random bytes, per session; the page sends it in X-CSRF-Token on every POST
 *   lastUsedAt     ms since epoch; a session unused for `idleMs` is gone (checked on every lookup)
 *   createdAt      ms since epoch; a session older than `maxAgeMs` is gone however much it is used (an
 *                  open page's live stream counts as use, so without this a session could live forever)
 *
 * Memory bound: at most `maxSessions`; logging in beyond that evicts expired sessions, then the least
 * recently used one. A queue server restart logs everybody out (sessions are not persisted).
 * Time is a parameter (`now`, ms since epoch); this module never reads the clock.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface Session {
  readonly csrfToken: string;
  /** ms since epoch */
  readonly createdAt: number;
  lastUsedAt: number;
}

export interface SessionStoreOptions {
  /** A session unused this long is gone, ms (default 12 h). */
  readonly idleMs?: number;
  /** A session this old is gone, used or not, ms (default 24 h). */
  readonly maxAgeMs?: number;
  /** Sessions kept at most (default 100). */
  readonly maxSessions?: number;
}

export const DEFAULT_IDLE_MS = 12 * 60 * 60 * 1000;
export const DEFAULT_MAX_AGE_MS = 24 * 60 * 60 * 1000;
const DEFAULT_MAX_SESSIONS = 100;
/** What a session cookie value looks like: 43 base64url characters (32 bytes). */
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

export class SessionStore {
  readonly idleMs: number;
  readonly maxAgeMs: number;
  readonly #maxSessions: number;
  /** Key: SHA-256 (hex) of the cookie value. Map order is insertion order, not use order. */
  readonly #sessions = new Map<string, Session>();

  constructor(options: SessionStoreOptions = {}) {
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.#maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** A new session; returns the cookie value (give it to the browser, keep it nowhere else). */
  create(now: number): { cookieValue: string; session: Session } {
    if (this.#sessions.size >= this.#maxSessions) this.#evict(now);
    const cookieValue = randomBytes(32).toString('base64url');
    const session: Session = { csrfToken: randomBytes(32).toString('base64url'), createdAt: now, lastUsedAt: now };
    this.#sessions.set(keyOf(cookieValue), session);
    return { cookieValue, session };
  }

  /** The live session for a cookie value, marked used now; null when unknown or expired (then forgotten). */
  use(cookieValue: string | undefined, now: number): Session | null {
    const session = this.peek(cookieValue, now);
    if (session !== null) session.lastUsedAt = now;
    return session;
  }

  /** Like `use`, without counting as use. */
  peek(cookieValue: string | undefined, now: number): Session | null {
    if (cookieValue === undefined || !COOKIE_VALUE.test(cookieValue)) return null;
    const key = keyOf(cookieValue);
    const session = this.#sessions.get(key);
    if (session === undefined) return null;
    if (this.#expired(session, now)) {
      this.#sessions.delete(key);
      return null;
    }
    return session;
  }

  /** Logout: the cookie value is worthless from now on. */
  delete(cookieValue: string | undefined): boolean {
    if (cookieValue === undefined || !COOKIE_VALUE.test(cookieValue)) return false;
    return this.#sessions.delete(keyOf(cookieValue));
  }

  #expired(session: Session, now: number): boolean {
    return now - session.lastUsedAt >= this.idleMs || now - session.createdAt >= this.maxAgeMs;
  }

  #evict(now: number): void {
    let oldestKey: string | null = null;
    let oldestUse = Infinity;
    for (const [key, session] of this.#sessions) {
      if (this.#expired(session, now)) this.#sessions.delete(key);
      else if (session.lastUsedAt < oldestUse) {
        oldestUse = session.lastUsedAt;
        oldestKey = key;
      }
    }
    if (this.#sessions.size >= this.#maxSessions && oldestKey !== null) this.#sessions.delete(oldestKey);
  }
}

function keyOf(cookieValue: string): string {
  return createHash('sha256').update(cookieValue).digest('hex');
}
