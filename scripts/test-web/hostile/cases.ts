/**
 * The hostile host's cases and their ground truth: every path it serves on purpose, what the bytes do,
 * and what one request by a sound fetcher ends as. Pure data; `server.ts` serves it, tests assert it.
 *
 * "A sound fetcher" means one with a body limit of at most 2 MiB (after decompression), a total time
 * limit per request between 2 and 10 s, headers limited to 64 KiB and 1,000 fields, and the protocol
 * LIMITS (5,000 links per page, 2,048 characters per URL, 512 characters of title). The slow cases
 * take longer than 10 s to finish, so any such fetcher cuts them.
 */
import { HOSTILE_TRAPS } from './traps.js';

export type HostileGroup = 'index' | 'bomb' | 'body' | 'headers' | 'redirect' | 'charset' | 'markup' | 'links' | 'trap' | 'protocol' | 'status' | 'robots';

/** How one request ends, as the fetcher's ItemResult reports it. */
export type HostileOutcome =
  | {
      kind: 'response';
      status: number;
      /** Body cut at the body limit (or the parser's budget). */
      truncated: boolean;
      /** Media type of Content-Type (no parameters); null: not asserted (bodies of non-2xx are not read). */
      mediaType: string | null;
      /** Canonical absolute Location of a 3xx; null when the target is not crawlable (javascript:). */
      redirectTo?: string | null;
      /** Retry-After, ms. */
      retryAfterMs?: number;
      /** Title the page must decode to (exactly), when it is a charset case. */
      title?: string;
    }
  | { kind: 'error'; code: string };

export interface HostileCase {
  /** Canonical path and query on the hostile host. */
  path: string;
  group: HostileGroup;
  /** One line: what the server does. */
  what: string;
  /** The first request's outcome. */
  expect: HostileOutcome;
  /** Requests that answer `expect` before the URL recovers and answers 200 (flaky statuses); 0 when it never changes. */
  failuresBeforeRecovery: number;
  /** Linked from the hostile index (false only for pages behind others: chain steps, trap pages). */
  linked: boolean;
}

/** Body limit and time limits the outcomes assume (see the header comment). */
export const SOUND_FETCHER = { maxBodyBytes: 2 * 1024 * 1024, minTotalTimeoutMs: 2_000, maxTotalTimeoutMs: 10_000 } as const;

/** Inflated size of each compression bomb. */
export const BOMB_INFLATED_BYTES = 1024 * 1024 * 1024;
/** Steps of the redirect chain before its end page. */
export const CHAIN_STEPS = 30;
/** Links of the link bomb, characters of the long URL, depth of the nested page, links of the session-id page. */
export const LINK_BOMB_LINKS = 200_000;
export const LONG_URL_CHARS = 100_000;
export const NESTED_ELEMENTS = 200_000;
/** Open elements of the unclosed page, and its size: end tags that close nothing fill it to about this. */
export const UNCLOSED_ELEMENTS = 31_000;
export const UNCLOSED_PAGE_BYTES = 1_900_000;
export const SESSION_ID_LINKS = 10_000;
/** robots.txt size; its first rule disallows DISALLOWED_PREFIX. */
export const ROBOTS_BYTES = 600 * 1024;
export const DISALLOWED_PREFIX = '/private/';
/** The slow cases: one byte (or header line) every this many ms, for this many steps. */
export const SLOW_STEP_MS = 2_000;
export const SLOW_STEPS = 30;
/** Out-of-scope redirect target (`.invalid` never resolves, RFC 6761). */
export const OUT_OF_SCOPE_URL = 'http://out-of-scope.invalid/landing.html';

/** Titles the charset pages decode to under the WHATWG encoding rules. */
export const CHARSET_TITLES = {
  shiftJis: '日本語のページ',
  utf16: 'UTF-16 page: ünïcödé ✓',
  /** Invalid bytes (0xFF, a truncated sequence, an encoded surrogate) each become U+FFFD. */
  invalidUtf8: 'bad \uFFFD bytes \uFFFD( here \uFFFD\uFFFD\uFFFD end',
  /** windows-1252 bytes under a UTF-8 header: the header wins, so é and the curly quotes are invalid. */
  lying: 'caf\uFFFD \uFFFDquoted\uFFFD',
} as const;

const html = (status: number, opts: Partial<Extract<HostileOutcome, { kind: 'response' }>> = {}): HostileOutcome => ({
  kind: 'response',
  status,
  truncated: false,
  mediaType: 'text/html',
  ...opts,
});
const error = (code: string): HostileOutcome => ({ kind: 'error', code });

export function hostileCases(origin: string): HostileCase[] {
  const c = (path: string, group: HostileGroup, what: string, expect: HostileOutcome, more: Partial<HostileCase> = {}): HostileCase => ({
    path,
    group,
    what,
    expect,
    failuresBeforeRecovery: 0,
    linked: true,
    ...more,
  });
  const cases: HostileCase[] = [
    c('/index.html', 'index', 'links to every case', html(200), { linked: false }),
    c('/robots.txt', 'robots', `${ROBOTS_BYTES / 1024} KiB; the first rule disallows ${DISALLOWED_PREFIX}`, { kind: 'response', status: 200, truncated: true, mediaType: 'text/plain' }, { linked: false }),
    c(`${DISALLOWED_PREFIX}never.html`, 'robots', 'disallowed by the first robots.txt rule: must never be requested', html(200)),

    c('/bomb/gzip.html', 'bomb', 'gzip, ~1 MB on the wire inflating to 1 GiB of zeros (concatenated members)', html(200, { truncated: true })),
    c('/bomb/deflate.html', 'bomb', 'deflate (zlib), ~1 MB inflating to 1 GiB of zeros', html(200, { truncated: true })),
    c('/bomb/br.html', 'bomb', 'brotli, ~200 KB inflating to 1 GiB of zeros', html(200, { truncated: true })),
    c('/bomb/bad-gzip.html', 'bomb', 'Content-Encoding: gzip over bytes that are not gzip', error('bad-content-encoding')),

    c('/body/endless.html', 'body', 'chunked, never ends (64 KiB chunks as fast as the client reads)', html(200, { truncated: true })),
    c('/body/slow.html', 'body', `headers at once, then one body byte every ${SLOW_STEP_MS} ms`, error('timeout')),
    c('/headers/slow.html', 'headers', `status line at once, then one header line every ${SLOW_STEP_MS} ms`, error('timeout')),
    c('/headers/huge-line.html', 'headers', 'one 64 KiB header line', error('headers-too-large')),
    c('/headers/many.html', 'headers', '5,000 short header fields (under 64 KiB in all)', error('headers-too-large')),

    c('/redirect/loop-a', 'redirect', '302 to /redirect/loop-b, which redirects back', html(302, { mediaType: null, redirectTo: `${origin}/redirect/loop-b` })),
    c('/redirect/loop-b', 'redirect', '302 back to /redirect/loop-a', html(302, { mediaType: null, redirectTo: `${origin}/redirect/loop-a` }), { linked: false }),
    c('/redirect/chain/1', 'redirect', `first of a ${CHAIN_STEPS}-step 301 chain`, html(301, { mediaType: null, redirectTo: `${origin}/redirect/chain/2` })),
    c('/redirect/javascript', 'redirect', '302 to javascript:alert(document.domain)', html(302, { mediaType: null, redirectTo: null })),
    c('/redirect/out-of-scope', 'redirect', `302 to ${OUT_OF_SCOPE_URL}`, html(302, { mediaType: null, redirectTo: OUT_OF_SCOPE_URL })),

    c('/charset/shift-jis.html', 'charset', 'Shift_JIS declared only in <meta charset>', html(200, { title: CHARSET_TITLES.shiftJis })),
    c('/charset/utf-16.html', 'charset', 'UTF-16LE with a BOM, header claiming iso-8859-1 (the BOM wins)', html(200, { title: CHARSET_TITLES.utf16 })),
    c('/charset/invalid-utf8.html', 'charset', 'UTF-8 with invalid byte sequences', html(200, { title: CHARSET_TITLES.invalidUtf8 })),
    c('/charset/lying.html', 'charset', 'header says UTF-8, bytes are windows-1252', html(200, { title: CHARSET_TITLES.lying })),

    c('/markup/script-title.html', 'markup', '<title> holding <script> and an onerror <img> (raw: title is RCDATA)', html(200)),
    c('/markup/attribute-breakout.html', 'markup', 'hrefs carrying quotes, angle brackets and event handlers', html(200)),
    c('/markup/scheme-links.html', 'markup', 'javascript:, data:, vbscript: links, obfuscated with case, entities, tabs and spaces', html(200)),
    c('/markup/huge-title.html', 'markup', 'a 100 KB title', html(200)),

    c('/links/bomb.html', 'links', `${LINK_BOMB_LINKS.toLocaleString('en')} links (over the body limit)`, html(200, { truncated: true })),
    c('/links/long-url.html', 'links', `one ${LONG_URL_CHARS.toLocaleString('en')}-character URL and one normal link`, html(200)),
    c('/links/nested.html', 'links', `${NESTED_ELEMENTS.toLocaleString('en')} nested elements (htmlparser2 is quadratic in depth)`, html(200, { truncated: true })),
    c('/links/unclosed.html', 'links', `${UNCLOSED_ELEMENTS.toLocaleString('en')} open elements, then end tags that close nothing (each one a scan of htmlparser2's whole stack)`, html(200, { truncated: true })),
    c('/links/session-ids.html', 'links', `${SESSION_ID_LINKS.toLocaleString('en')} links differing only by ?sid=`, html(200)),

    c('/trap/calendar/2024/06', 'trap', 'an endless calendar: every month links to the previous and next', html(200)),
    ...HOSTILE_TRAPS.map((trap) => c(trap.entry, 'trap', trap.what, html(200))),
    c('/trap/a/', 'trap', 'an endless path: /trap/a/ links to a/, so /trap/a/a/a/... never ends', html(200)),

    c('/fault/reset.html', 'protocol', 'a response head cut off by a TCP reset before its blank line', error('connection-reset')),
    c('/fault/short-body.html', 'protocol', 'Content-Length 10000, 4000 bytes, then a clean close', error('content-length-mismatch')),
    c('/fault/http10.html', 'protocol', 'HTTP/1.0 response without Content-Length, body delimited by the close', html(200)),
    c('/fault/empty.html', 'protocol', '200 text/html with an empty body', html(200)),
    c('/fault/binary.html', 'protocol', '4 KiB of binary bytes labelled text/html', html(200)),
    c('/fault/doc.pdf', 'protocol', 'a PDF', html(200, { mediaType: 'application/pdf' })),
    c('/fault/garbage-status', 'protocol', 'a response that is not HTTP', error('bad-http-response')),

    c('/status/429.html', 'status', '429 with Retry-After: 1 on the first request, then 200', html(429, { mediaType: null, retryAfterMs: 1000 }), { failuresBeforeRecovery: 1 }),
    c('/status/503.html', 'status', '503 with Retry-After: 1 on the first request, then 200', html(503, { mediaType: null, retryAfterMs: 1000 }), { failuresBeforeRecovery: 1 }),
    c('/status/429-forever.html', 'status', '429 with Retry-After: 1 on every request, for ever', html(429, { mediaType: null, retryAfterMs: 1000 })),
    c('/status/503-forever.html', 'status', '503 with Retry-After: 1 on every request, for ever', html(503, { mediaType: null, retryAfterMs: 1000 })),
    c('/status/500-recovers.html', 'status', '500 on the first three requests, then 200', html(500, { mediaType: null }), { failuresBeforeRecovery: 3 }),
    c('/status/404.html', 'status', '404', html(404, { mediaType: null })),
    c('/status/410.html', 'status', '410', html(410, { mediaType: null })),
  ];
  for (let step = 2; step <= CHAIN_STEPS; step++) {
    const next = step === CHAIN_STEPS ? `${origin}/redirect/chain-end.html` : `${origin}/redirect/chain/${step + 1}`;
    cases.push(c(`/redirect/chain/${step}`, 'redirect', `step ${step} of the chain`, html(301, { mediaType: null, redirectTo: next }), { linked: false }));
  }
  cases.push(c('/redirect/chain-end.html', 'redirect', 'the end of the chain', html(200), { linked: false }));
  return cases;
}

/** robots.txt of the hostile host, read per RFC 9309 for any agent: everything but DISALLOWED_PREFIX. */
export function hostileRobotsAllows(pathAndQuery: string): boolean {
  return pathAndQuery === '/robots.txt' || !pathAndQuery.startsWith(DISALLOWED_PREFIX);
}
