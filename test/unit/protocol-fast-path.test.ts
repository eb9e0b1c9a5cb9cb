/**
 * The fast acceptance of results bodies (shared/protocol.ts `isPlainResultsRequest`, used through
 * `parseProtocolBody`) must never change a verdict of the schema: whatever JSON body it accepts, the zod
 * schema accepts and returns unchanged; whatever else comes in goes to the schema itself. Checked on
 * realistic bodies and on random mutations of them at every field (values at and past each bound,
 * missing and extra keys, wrong types), after a JSON round trip as the queue server receives them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildIndexData } from '../../shared/index-data.js';
import { isPlainResultsRequest, LIMITS, parseProtocolBody, PROTOCOL_VERSION, resultsRequestSchema } from '../../shared/protocol.js';
import { captureToWire } from '../../shared/warc/capture-wire.js';
import { buildCapture, MAX_HEAD_BYTES } from '../../shared/warc/exchange.js';
import { exchangeOf } from '../support/warc-exchange.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`protocol-fast-path fast-check seed ${seed} (set FC_SEED to replay)`);

function pageResult(i: number): Record<string, unknown> {
  return {
    slot: 0,
    i,
    url: `http://127.0.0.2:8080/docs/${i}.html`,
    fetchedAt: 1_764_000_000_000 + i,
    durationMs: 12,
    status: 200,
    error: null,
    contentType: 'text/html; charset=utf-8',
    bytes: 14_000,
    wireBytes: 4_200,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: { etag: '"abc"', lastModified: 'Tue, 02 Dec 2026 10:00:00 GMT', date: 'Tue, 02 Dec 2026 10:00:01 GMT', age: null, expires: null, cacheControl: 'max-age=60' },
    signature: '0123456789abcdef',
    page: {
      title: 'Title',
      description: null,
      language: 'en',
      excerpt: 'Some text of the page.',
      canonical: null,
      noindex: false,
      nofollow: false,
      outlinks: 2,
      simhash: 'fedcba9876543210',
    },
    links: ['http://127.0.0.2:8080/a.html', 'http://127.0.0.2:8080/b.html'],
    robotsTxt: null,
    capture: null,
    sitemap: null,
    address: '127.0.0.2',
    index: null,
  };
}

/** A real capture's wire form (the records of an exchange, as a fetcher posts them). */
const CAPTURE = captureToWire(
  buildCapture(exchangeOf({ url: 'http://127.0.0.2:8080/docs/0.html', body: '<html><title>T</title>hello</html>', startedAt: 1_764_000_000_000 }), { maxBodyBytes: 1024 }),
) as unknown as Record<string, unknown>;

/** A page result with its search index data, as a fetcher builds it (terms, positions, stored text, anchors). */
function indexedResult(i: number): Record<string, unknown> {
  const index = buildIndexData({
    title: 'Herons of the marsh',
    headings: ['Grey heron', 'Feeding'],
    bodyText: 'The grey heron waits in the reeds. Herons eat fish; the heron waits.',
    language: 'en',
    anchors: [
      { url: 'http://127.0.0.2:8080/a.html', text: 'egrets' },
      { url: 'http://127.0.0.2:8080/b.html', text: 'the bittern page' },
    ],
  });
  return { ...pageResult(i), index };
}

function body(): Record<string, unknown> {
  return {
    protocolVersion: PROTOCOL_VERSION,
    fetcherId: 'fetcher-1',
    scheduleId: 'abc123:7',
    results: [
      { ...pageResult(0), capture: { ...CAPTURE } },
      indexedResult(0),
      { ...pageResult(1), status: null, error: { code: 'timeout', message: 'no answer in 30000 ms' }, contentType: null, page: null, links: [], signature: null, bytes: 0, wireBytes: 0 },
      { ...pageResult(2), status: 301, redirectTo: 'http://127.0.0.2:8080/new.html', page: null, links: [] },
      { ...pageResult(3), status: 503, retryAfterMs: 5000, page: null, links: [] },
      { ...pageResult(4), url: 'http://127.0.0.2:8080/robots.txt', robotsTxt: 'User-agent: *\nDisallow: /private\n', page: null, links: [], capture: { ...CAPTURE, status: 404, truncated: 'length', ipAddress: null, mime: null } },
    ],
  };
}

/** Values at and just past every bound the schema has, and of every wrong type. */
const edgeValues: unknown[] = [
  null,
  undefined,
  true,
  0,
  -0,
  -1,
  1.5,
  99,
  100,
  999,
  1000,
  2 ** 53 - 1,
  2 ** 53,
  Number.NaN,
  '',
  'x',
  '0123456789abcdef',
  '0123456789ABCDEF',
  '0123456789abcde',
  'timeout',
  'not-a-code',
  'a:b_c.d-1',
  'bad id',
  ...[35, 36, 64, 65, 200, 201, 500, 501, 512, 513, 1024, 1025, 2000, 2001, 2048, 2049, 16_384, 16_385].map((n) => 'a'.repeat(n)),
  // Index data: 8,193 characters that are 16,386 bytes of UTF-8 (the stored text's bound is in bytes).
  '\u00e9'.repeat(8193),
  'english',
  'klingon',
  ['heron', 1, [0]],
  ['heron', 2, [0]],
  ['heron', 1, [-1]],
  [['heron', 1, [0]]],
  [['heron', 1, [0]], ['heron', 1, [1]]],
  [['a'.repeat(65), 1, [0]]],
  [['heron', 2, [3, 0]]],
  [['heron', 1, [16_384]]],
  { url: 'http://x/', terms: ['egret'] },
  { url: 'http://x/', terms: [] },
  { url: '', terms: ['egret'] },
  Array.from({ length: 33 }, () => 'egret'),
  [],
  ['http://x/'],
  [''],
  {},
  { code: 'timeout', message: 'm' },
  { code: 'timeout', message: 'm', extra: 1 },
  Object.assign(Object.create(null) as object, { code: 'timeout', message: 'm' }),
  // The capture's own bounds and patterns (shared/warc/capture-wire.ts).
  'sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567',
  'sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ23456',
  'sha1:abcdefghijklmnopqrstuvwxyz234567',
  '<urn:uuid:01234567-89ab-4def-8123-456789abcdef>',
  '<urn:uuid:01234567-89AB-4DEF-8123-456789ABCDEF>',
  'length',
  'disconnect',
  'truncated',
  'QUJD',
  'QUJD=',
  'QUJ!',
  2.5,
  Number.POSITIVE_INFINITY,
  ...[8192, 8193].map((n) => 'a'.repeat(n)),
  ...[Math.ceil(MAX_HEAD_BYTES / 3) * 4, Math.ceil(MAX_HEAD_BYTES / 3) * 4 + 1].map((n) => 'A'.repeat(n)),
];

type Path = (string | number)[];

/** Every path to a field of the body, containers included. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

type Mutation = { kind: 'set'; path: Path; value: unknown } | { kind: 'delete'; path: Path } | { kind: 'extra'; path: Path; key: string };

/** The node at `path`, or undefined when an earlier mutation removed or replaced part of the way. */
function at(root: unknown, path: Path): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}

function mutate(target: Record<string, unknown>, m: Mutation): Record<string, unknown> {
  const copy = structuredClone(target);
  if (m.kind === 'extra') {
    const node = at(copy, m.path);
    if (typeof node === 'object' && node !== null) Object.defineProperty(node, m.key, { value: 1, enumerable: true, writable: true, configurable: true });
    return copy;
  }
  const parent = at(copy, m.path.slice(0, -1));
  const last = m.path[m.path.length - 1];
  if (last === undefined || typeof parent !== 'object' || parent === null) return copy;
  if (m.kind === 'delete') delete (parent as Record<string | number, unknown>)[last];
  else (parent as Record<string | number, unknown>)[last] = m.value;
  return copy;
}

const base = body();
const paths = pathsOf(base);
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), path: fc.constantFrom(...paths.filter((p) => p.length > 0)), value: fc.constantFrom(...edgeValues) }),
  fc.record({ kind: fc.constant('delete' as const), path: fc.constantFrom(...paths.filter((p) => p.length > 0)) }),
  fc.record({ kind: fc.constant('extra' as const), path: fc.constantFrom(...paths), key: fc.constantFrom('extra', '__proto__', 'constructor') }),
);

/**
 * Checks one candidate as the queue server receives it (after JSON: undefined fields vanish, an own
 * "__proto__" key stays an own key, -0 becomes 0): what the fast check accepts, the schema accepts and
 * returns unchanged, and `parseProtocolBody` answers exactly as the schema does. True when accepted.
 */
function agreesWithSchema(candidate: unknown): boolean {
  const input = JSON.parse(JSON.stringify(candidate)) as unknown;
  const schema = resultsRequestSchema.safeParse(input);
  const plain = isPlainResultsRequest(input);
  if (plain) {
    expect(schema.success).toBe(true);
    expect(schema.data).toEqual(input);
  }
  const fast = parseProtocolBody(resultsRequestSchema, input);
  expect(fast.success).toBe(schema.success);
  if (fast.success) expect(fast.data).toEqual(schema.data);
  else expect(fast.error?.issues).toEqual(schema.error?.issues);
  return plain;
}

describe('fast acceptance of results bodies', () => {
  it('accepts realistic bodies, and the schema returns them unchanged', () => {
    const b = body();
    expect(isPlainResultsRequest(b)).toBe(true);
    const parsed = resultsRequestSchema.safeParse(b);
    expect(parsed.success).toBe(true);
    expect(parsed.data).toEqual(b);
    expect(parseProtocolBody(resultsRequestSchema, b)).toEqual({ success: true, data: b });
    // A result without `capture` (an older fetcher) is valid, but left to the schema.
    const { capture: _, ...older } = pageResult(0);
    expect(resultsRequestSchema.safeParse({ ...b, results: [older] }).success).toBe(true);
    expect(isPlainResultsRequest({ ...b, results: [older] })).toBe(false);
    const full = { ...b, results: Array.from({ length: LIMITS.resultsPerPost }, (_, i) => (i % 2 === 0 ? indexedResult(i) : pageResult(i))) };
    expect(isPlainResultsRequest(full)).toBe(true);
    expect(isPlainResultsRequest({ ...b, results: [...full.results, pageResult(0)] })).toBe(false);
  });

  it('gives the schema\'s verdict for every single change: each field set to each edge value, removed, or given a neighbour', () => {
    let accepted = 0;
    for (const path of paths) {
      const changes: Mutation[] = [{ kind: 'extra', path, key: 'extra' }, { kind: 'extra', path, key: '__proto__' }];
      if (path.length > 0) changes.push({ kind: 'delete', path }, ...edgeValues.map((value): Mutation => ({ kind: 'set', path, value })));
      for (const change of changes) if (agreesWithSchema(mutate(base, change))) accepted++;
    }
    // Some changes keep the body valid (a bound not reached, null where null is allowed): the fast path takes those.
    expect(accepted).toBeGreaterThan(100);
  });

  it('gives the schema\'s verdict for random combinations of changes', () => {
    fc.assert(
      fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (mutations) => {
        agreesWithSchema(mutations.reduce(mutate, base));
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('leaves every other schema to zod', () => {
    const b = body();
    const other = parseProtocolBody(resultsRequestSchema.shape.results.element, (b.results as unknown[])[0]);
    expect(other.success).toBe(true);
    expect(other.data).not.toBe((b.results as unknown[])[0]);
  });
});
