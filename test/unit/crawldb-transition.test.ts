/**
 * The crawl database state machine (queue-server/crawldb/transition.ts), tested as Nutch's
 * TestCrawlDbStates does: every old status against every fetch outcome, the expected result written
 * down as a table, one test per cell; then properties over random records, outcomes and policies.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import { adaptInterval, nextFetchAt, type FetchSchedulePolicy } from '../../queue-server/crawldb/fetch-schedule.js';
import { CRAWL_STATUSES, newCrawlDbRecord, type CrawlDbRecord, type CrawlDbStatus } from '../../queue-server/crawldb/record.js';
import { applyFetch, HOST_RECHECK_MS, type FetchOutcome } from '../../queue-server/crawldb/transition.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`crawldb-transition fast-check seed ${seed} (set FC_SEED to replay)`);

const MINUTE = 60_000;
/** The default schedule with a retry base of one minute (the waits below are written in minutes). */
const POLICY: FetchSchedulePolicy = { ...DEFAULT_FETCH_SCHEDULE, retryBaseMs: MINUTE };
const DAY = 24 * 60 * MINUTE;
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const OLD_INTERVAL = 10 * DAY;

const SIG_OLD = 'aaaaaaaaaaaaaaaa';
const SIG_NEW = 'bbbbbbbbbbbbbbbb';
const SIM_OLD = '0123456789abcdef';
const SIM_NEW = 'fedcba9876543210';
const ORIGINAL = '1111111111111111';
const OTHER_PAGE = '2222222222222222';
const CANONICAL = '3333333333333333';
const OLD_TARGET = '4444444444444444';
const NEW_TARGET = '5555555555555555';

/** The record as it stands in each old status before the fetch (a URL fetched before, except unfetched). */
function recordIn(status: CrawlDbStatus): CrawlDbRecord {
  const base = newCrawlDbRecord('https://example.com/a/page', 2, 0.25, NOW - 20 * DAY, POLICY);
  if (status === 'unfetched') return { ...base, fetchIntervalMs: OLD_INTERVAL, nextFetchAt: NOW };
  const seen: CrawlDbRecord = {
    ...base,
    status,
    firstFetchAt: NOW - 20 * DAY,
    lastFetchAt: NOW - OLD_INTERVAL,
    modifiedAt: NOW - 15 * DAY,
    fetchIntervalMs: OLD_INTERVAL,
    nextFetchAt: NOW,
    lastHttpStatus: 200,
    signature: SIG_OLD,
    simhash: SIM_OLD,
  };
  switch (status) {
    case 'duplicate':
      return { ...seen, duplicateOf: ORIGINAL };
    case 'redir_temp':
      return { ...seen, lastHttpStatus: 302, redirectTo: OLD_TARGET };
    case 'redir_perm':
      return { ...seen, lastHttpStatus: 301, redirectTo: OLD_TARGET };
    case 'retry':
      return { ...seen, lastHttpStatus: 503, errorCode: 'http-503', retries: 1 };
    case 'gone':
      return { ...seen, lastHttpStatus: 404, errorCode: 'http-404' };
    case 'robots_denied':
      return { ...seen, errorCode: 'robots-disallowed' };
    default:
      return seen;
  }
}

/** What is expected of the fields every outcome of one kind sets the same way. */
interface OutcomeCase {
  readonly name: string;
  readonly outcome: FetchOutcome;
  /** Retries of the old record, when the case is about them (else recordIn's). */
  readonly oldRetries?: number;
  /** Expected retries after the fetch; 'kept': the old record's. */
  readonly retries: number | 'kept';
  /** Expected next fetch time: after the (adapted) interval, after a fixed wait, or at freshUntil. */
  readonly next: 'interval' | { readonly waitMs: number } | { readonly at: number };
  readonly lastHttpStatus: number | null | 'kept';
  readonly errorCode: string | null;
  /** The body fields (signature, simhash) after the fetch: the outcome's, or the old record's. */
  readonly content: 'new' | 'kept';
  readonly redirectTo: string | null;
  /** False only for robots-denied: no request went out, fetch times stay. */
  readonly requested: boolean;
}

const success = (fields: Partial<Extract<FetchOutcome, { kind: 'success' }>>): FetchOutcome => ({
  kind: 'success',
  status: 200,
  signature: SIG_OLD,
  simhash: SIM_OLD,
  duplicateOf: null,
  canonicalOf: null,
  freshUntil: null,
  ...fields,
});

const FRESH_UNTIL = NOW + 100 * DAY;
const ok = { retries: 0, lastHttpStatus: 200, errorCode: null, content: 'new', redirectTo: null, requested: true } as const;
const notModified = { retries: 0, lastHttpStatus: 304, errorCode: null, content: 'kept', redirectTo: null, requested: true } as const;
const failure = { content: 'kept', redirectTo: null, requested: true } as const;

function redirectCase(status: 301 | 302 | 303 | 307 | 308): OutcomeCase {
  return {
    name: `redirect ${status}`,
    outcome: { kind: 'redirect', status, target: NEW_TARGET },
    next: 'interval',
    retries: 0,
    lastHttpStatus: status,
    errorCode: null,
    content: 'kept',
    redirectTo: NEW_TARGET,
    requested: true,
  };
}

const OUTCOMES = {
  sameSignature: { name: 'success, same signature', outcome: success({}), next: 'interval', ...ok },
  newSignature: { name: 'success, new signature', outcome: success({ signature: SIG_NEW, simhash: SIM_NEW }), next: 'interval', ...ok },
  freshNewSignature: {
    name: 'success, new signature, fresh for 100 days',
    outcome: success({ signature: SIG_NEW, simhash: SIM_NEW, freshUntil: FRESH_UNTIL }),
    next: { at: FRESH_UNTIL },
    ...ok,
  },
  duplicateOf: { name: 'success, same body as another page', outcome: success({ signature: SIG_NEW, simhash: SIM_NEW, duplicateOf: OTHER_PAGE }), next: 'interval', ...ok },
  canonicalOf: { name: 'success, canonical link to another page', outcome: success({ canonicalOf: CANONICAL }), next: 'interval', ...ok },
  notModified: { name: '304 not modified', outcome: { kind: 'not-modified', freshUntil: null }, next: 'interval', ...notModified },
  freshNotModified: { name: '304 not modified, fresh for 100 days', outcome: { kind: 'not-modified', freshUntil: FRESH_UNTIL }, next: { at: FRESH_UNTIL }, ...notModified },
  redirect301: redirectCase(301),
  redirect302: redirectCase(302),
  redirect303: redirectCase(303),
  redirect307: redirectCase(307),
  redirect308: redirectCase(308),
  gone404: { name: '404 not found', outcome: { kind: 'gone', status: 404 }, retries: 0, next: { waitMs: POLICY.goneRecheckMs }, lastHttpStatus: 404, errorCode: 'http-404', ...failure },
  gone410: { name: '410 gone', outcome: { kind: 'gone', status: 410 }, retries: 0, next: { waitMs: POLICY.goneRecheckMs }, lastHttpStatus: 410, errorCode: 'http-410', ...failure },
  denied403: { name: '403 forbidden', outcome: { kind: 'denied', status: 403 }, retries: 0, next: { waitMs: POLICY.goneRecheckMs }, lastHttpStatus: 403, errorCode: 'http-403', ...failure },
  broken: { name: 'broken response (headers too large)', outcome: { kind: 'broken', code: 'headers-too-large' }, retries: 0, next: { waitMs: POLICY.goneRecheckMs }, lastHttpStatus: null, errorCode: 'headers-too-large', ...failure },
  transientFirst: {
    name: '503 at 0 retries',
    outcome: { kind: 'transient', code: 'http-503', status: 503, retryAfterMs: null },
    oldRetries: 0,
    retries: 1,
    next: { waitMs: MINUTE },
    lastHttpStatus: 503,
    errorCode: 'http-503',
    ...failure,
  },
  transientLast: {
    name: `timeout at ${POLICY.maxRetries - 1} retries (the last one allowed)`,
    outcome: { kind: 'transient', code: 'timeout', status: null, retryAfterMs: null },
    oldRetries: POLICY.maxRetries - 1,
    retries: POLICY.maxRetries,
    next: { waitMs: MINUTE * 2 ** (POLICY.maxRetries - 1) },
    lastHttpStatus: null,
    errorCode: 'timeout',
    ...failure,
  },
  transientExhausted: {
    name: `timeout at ${POLICY.maxRetries} retries (maxRetries)`,
    outcome: { kind: 'transient', code: 'timeout', status: null, retryAfterMs: null },
    oldRetries: POLICY.maxRetries,
    retries: POLICY.maxRetries + 1,
    // No answer at all: the host failed, not the URL, so it is rechecked after a day.
    next: { waitMs: Math.min(POLICY.goneRecheckMs, HOST_RECHECK_MS) },
    lastHttpStatus: null,
    errorCode: 'timeout',
    ...failure,
  },
  retryAfterFirst: {
    name: '429 with Retry-After 2 min at 0 retries',
    outcome: { kind: 'transient', code: 'http-429', status: 429, retryAfterMs: 2 * MINUTE },
    oldRetries: 0,
    retries: 'kept',
    next: { waitMs: 2 * MINUTE },
    lastHttpStatus: 429,
    errorCode: 'http-429',
    ...failure,
  },
  retryAfterExhausted: {
    name: `503 with Retry-After 1 h at ${POLICY.maxRetries} retries (maxRetries)`,
    outcome: { kind: 'transient', code: 'http-503', status: 503, retryAfterMs: 60 * MINUTE },
    oldRetries: POLICY.maxRetries,
    retries: 'kept',
    next: { waitMs: 60 * MINUTE },
    lastHttpStatus: 503,
    errorCode: 'http-503',
    ...failure,
  },
  robotsDenied: {
    name: 'robots-denied',
    outcome: { kind: 'robots-denied', code: 'robots-disallowed' },
    retries: 0,
    next: { waitMs: POLICY.goneRecheckMs },
    lastHttpStatus: 'kept',
    errorCode: 'robots-disallowed',
    content: 'kept',
    redirectTo: null,
    requested: false,
  },
  /** robots.txt of the host could not be fetched in --robots-attempts tries: the record says so, not "disallowed". */
  robotsUnreachable: {
    name: 'robots-unreachable',
    outcome: { kind: 'robots-denied', code: 'robots-unreachable' },
    retries: 0,
    // Asked again when its host is, after a day (the deny-all of an unreachable robots.txt stands that long).
    next: { waitMs: Math.min(POLICY.goneRecheckMs, HOST_RECHECK_MS) },
    lastHttpStatus: 'kept',
    errorCode: 'robots-unreachable',
    content: 'kept',
    redirectTo: null,
    requested: false,
  },
} satisfies Record<string, OutcomeCase>;
type OutcomeName = keyof typeof OUTCOMES;

/** An expected cell: the new status and whether the content counts as modified (null: not applicable). */
interface Cell {
  readonly status: CrawlDbStatus;
  readonly modified: boolean | null;
}
const cell = (status: CrawlDbStatus, modified: boolean | null = null): Cell => ({ status, modified });
const NOTMOD = cell('notmodified', false);
const CHANGED = cell('fetched', true);
/** Fetched with nothing to compare with: first fetch, or back from gone, a redirect or a robots.txt denial (it held no page). */
const NEW = cell('fetched', null);
/** A copy no longer a copy, its body unchanged: an original again, and new to the search index (fetched, not notmodified). */
const UNDUP = cell('fetched', false);
const DUP_SAME = cell('duplicate', false);
const DUP_CHANGED = cell('duplicate', true);
const DUP_NEW = cell('duplicate', null);
const RETRY = cell('retry');
const GONE = cell('gone');
const PERM = cell('redir_perm');
const TEMP = cell('redir_temp');
const ROBOTS = cell('robots_denied');

/** The matrix. Columns in CRAWL_STATUSES order. */
const COLUMNS = ['unfetched', 'fetched', 'notmodified', 'gone', 'redir_temp', 'redir_perm', 'retry', 'duplicate', 'robots_denied'] as const satisfies readonly CrawlDbStatus[];
// prettier-ignore
const MATRIX: readonly (readonly [OutcomeName, readonly [Cell, Cell, Cell, Cell, Cell, Cell, Cell, Cell, Cell]])[] = [
  //                        unfetched  fetched      notmodified  gone     redir_temp   redir_perm   retry        duplicate    robots_denied
  ['sameSignature',       [NEW,      NOTMOD,      NOTMOD,      NEW,     NEW,         NEW,         NOTMOD,      UNDUP,       NEW]],
  ['newSignature',        [NEW,      CHANGED,     CHANGED,     NEW,     NEW,         NEW,         CHANGED,     CHANGED,     NEW]],
  ['freshNewSignature',   [NEW,      CHANGED,     CHANGED,     NEW,     NEW,         NEW,         CHANGED,     CHANGED,     NEW]],
  ['duplicateOf',         [DUP_NEW,  DUP_CHANGED, DUP_CHANGED, DUP_NEW, DUP_NEW,     DUP_NEW,     DUP_CHANGED, DUP_CHANGED, DUP_NEW]],
  ['canonicalOf',         [DUP_NEW,  DUP_SAME,    DUP_SAME,    DUP_NEW, DUP_NEW,     DUP_NEW,     DUP_SAME,    DUP_SAME,    DUP_NEW]],
  ['notModified',         [NOTMOD,   NOTMOD,      NOTMOD,      NOTMOD,  NOTMOD,      NOTMOD,      NOTMOD,      DUP_SAME,    NOTMOD]],
  ['freshNotModified',    [NOTMOD,   NOTMOD,      NOTMOD,      NOTMOD,  NOTMOD,      NOTMOD,      NOTMOD,      DUP_SAME,    NOTMOD]],
  ['redirect301',         [PERM,     PERM,        PERM,        PERM,    PERM,        PERM,        PERM,        PERM,        PERM]],
  ['redirect302',         [TEMP,     TEMP,        TEMP,        TEMP,    TEMP,        TEMP,        TEMP,        TEMP,        TEMP]],
  ['redirect303',         [TEMP,     TEMP,        TEMP,        TEMP,    TEMP,        TEMP,        TEMP,        TEMP,        TEMP]],
  ['redirect307',         [TEMP,     TEMP,        TEMP,        TEMP,    TEMP,        TEMP,        TEMP,        TEMP,        TEMP]],
  ['redirect308',         [PERM,     PERM,        PERM,        PERM,    PERM,        PERM,        PERM,        PERM,        PERM]],
  ['gone404',             [GONE,     GONE,        GONE,        GONE,    GONE,        GONE,        GONE,        GONE,        GONE]],
  ['gone410',             [GONE,     GONE,        GONE,        GONE,    GONE,        GONE,        GONE,        GONE,        GONE]],
  ['denied403',           [GONE,     GONE,        GONE,        GONE,    GONE,        GONE,        GONE,        GONE,        GONE]],
  ['broken',              [GONE,     GONE,        GONE,        GONE,    GONE,        GONE,        GONE,        GONE,        GONE]],
  ['transientFirst',      [RETRY,    RETRY,       RETRY,       RETRY,   RETRY,       RETRY,       RETRY,       RETRY,       RETRY]],
  ['transientLast',       [RETRY,    RETRY,       RETRY,       RETRY,   RETRY,       RETRY,       RETRY,       RETRY,       RETRY]],
  ['transientExhausted',  [GONE,     GONE,        GONE,        GONE,    GONE,        GONE,        GONE,        GONE,        GONE]],
  ['retryAfterFirst',     [RETRY,    RETRY,       RETRY,       RETRY,   RETRY,       RETRY,       RETRY,       RETRY,       RETRY]],
  ['retryAfterExhausted', [RETRY,    RETRY,       RETRY,       RETRY,   RETRY,       RETRY,       RETRY,       RETRY,       RETRY]],
  ['robotsDenied',        [ROBOTS,   ROBOTS,      ROBOTS,      ROBOTS,  ROBOTS,      ROBOTS,      ROBOTS,      ROBOTS,      ROBOTS]],
  ['robotsUnreachable',   [ROBOTS,   ROBOTS,      ROBOTS,      ROBOTS,  ROBOTS,      ROBOTS,      ROBOTS,      ROBOTS,      ROBOTS]],
];

function describeCell(expected: Cell): string {
  if (expected.modified === null) return expected.status === 'fetched' || expected.status === 'duplicate' ? `${expected.status} (nothing to compare)` : expected.status;
  return `${expected.status} (${expected.modified ? 'content changed' : 'content unchanged'})`;
}

/** The interval a result should carry: adapted on fetched/notmodified when there was something to compare. */
function expectedInterval(expected: Cell): number {
  const adapts = (expected.status === 'fetched' || expected.status === 'notmodified') && expected.modified !== null;
  return adapts ? adaptInterval(OLD_INTERVAL, expected.modified!, POLICY) : OLD_INTERVAL;
}

describe('crawl db transition matrix (every old status x every outcome)', () => {
  it('covers every status and every outcome case', () => {
    expect([...COLUMNS]).toEqual([...CRAWL_STATUSES]);
    expect(new Set(MATRIX.map(([name]) => name))).toEqual(new Set(Object.keys(OUTCOMES)));
  });

  const rows = MATRIX.flatMap(([name, cells]) => COLUMNS.map((old, column) => ({ name, old, expected: cells[column]! })));
  it.each(rows.map((row) => [`${row.old} + ${OUTCOMES[row.name].name} -> ${describeCell(row.expected)}`, row] as const))('%s', (_, { name, old: oldStatus, expected }) => {
    const spec: OutcomeCase = OUTCOMES[name];
    const fixture = recordIn(oldStatus);
    const old = spec.oldRetries === undefined ? fixture : { ...fixture, retries: spec.oldRetries };
    const { record, modified } = applyFetch(old, spec.outcome, NOW, POLICY);

    expect(record.status).toBe(expected.status);
    expect(modified).toBe(expected.modified);

    // Identity never changes.
    expect([record.url, record.depth, record.score]).toEqual([old.url, old.depth, old.score]);

    // Schedule.
    const interval = expectedInterval(expected);
    expect(record.fetchIntervalMs).toBe(interval);
    const next = spec.next;
    const expectedNext = next === 'interval' ? NOW + interval : 'waitMs' in next ? NOW + next.waitMs : next.at;
    expect(record.nextFetchAt).toBe(expectedNext);
    expect(record.retries).toBe(spec.retries === 'kept' ? old.retries : spec.retries);

    // What the fetch said.
    expect(record.lastHttpStatus).toBe(spec.lastHttpStatus === 'kept' ? old.lastHttpStatus : spec.lastHttpStatus);
    expect(record.errorCode).toBe(spec.errorCode);
    expect(record.firstFetchAt).toBe(spec.requested ? (old.firstFetchAt ?? NOW) : old.firstFetchAt);
    expect(record.lastFetchAt).toBe(spec.requested ? NOW : old.lastFetchAt);

    // Content: new body fields on a success; modifiedAt moves unless the content is known unchanged.
    if (spec.content === 'new' && spec.outcome.kind === 'success') {
      expect([record.signature, record.simhash]).toEqual([spec.outcome.signature, spec.outcome.simhash]);
      expect(record.modifiedAt).toBe(expected.modified === false ? old.modifiedAt : NOW);
    } else {
      expect([record.signature, record.simhash, record.modifiedAt]).toEqual([old.signature, old.simhash, old.modifiedAt]);
    }

    // Pointers: duplicateOf only on duplicates and on retries (a copy waiting for a retry is still a copy), redirectTo only on redirects.
    const expectedDuplicateOf =
      expected.status === 'retry' ? old.duplicateOf : expected.status !== 'duplicate' ? null : spec.outcome.kind === 'success' ? (spec.outcome.canonicalOf ?? spec.outcome.duplicateOf) : old.duplicateOf;
    expect(record.duplicateOf).toBe(expectedDuplicateOf);
    expect(record.redirectTo).toBe(spec.redirectTo);

    // The old record is not touched.
    expect(old).toEqual(spec.oldRetries === undefined ? recordIn(oldStatus) : { ...recordIn(oldStatus), retries: spec.oldRetries });
  });
});

describe('crawl db transitions over time', () => {
  it('backs off 1, 2, 4 minutes over three transient failures and gives up (gone) at the fourth', () => {
    let record = { ...recordIn('fetched') };
    const waits: number[] = [];
    let now = NOW;
    for (let attempt = 1; attempt <= 4; attempt++) {
      record = applyFetch(record, { kind: 'transient', code: 'connection-refused', status: null, retryAfterMs: null }, now, POLICY).record;
      waits.push(record.nextFetchAt - now);
      now = record.nextFetchAt;
    }
    expect(waits).toEqual([MINUTE, 2 * MINUTE, 4 * MINUTE, Math.min(POLICY.goneRecheckMs, HOST_RECHECK_MS)]);
    expect(record.status).toBe('gone');
    expect(record.retries).toBe(POLICY.maxRetries + 1);
    expect(record.errorCode).toBe('connection-refused');
  });

  it('does not spend a retry on Retry-After, so a throttling server never makes a page gone', () => {
    let record = { ...recordIn('fetched') };
    for (let attempt = 0; attempt < 10; attempt++) {
      record = applyFetch(record, { kind: 'transient', code: 'http-429', status: 429, retryAfterMs: 30_000 }, NOW + attempt, POLICY).record;
    }
    expect(record.status).toBe('retry');
    expect(record.retries).toBe(0);
  });

  it('keeps a copy a copy through a failed refetch and the 304 after it', () => {
    const failed = applyFetch(recordIn('duplicate'), { kind: 'transient', code: 'http-503', status: 503, retryAfterMs: null }, NOW, POLICY).record;
    expect([failed.status, failed.duplicateOf]).toEqual(['retry', ORIGINAL]);
    // Before, the retry forgot its original, and the 304 made it notmodified: an original in the
    // duplicate indexes, while the search index kept it a copy.
    const revalidated = applyFetch(failed, { kind: 'not-modified', freshUntil: null }, NOW + MINUTE, POLICY).record;
    expect([revalidated.status, revalidated.duplicateOf]).toEqual(['duplicate', ORIGINAL]);
    // Its refetch answers 200 with the same body and no original stands (no duplicateOf found): an original
    // now, new to the search index (fetched), as a duplicate's would be.
    const back = applyFetch(failed, success({ signature: failed.signature!, simhash: failed.simhash }), NOW + MINUTE, POLICY).record;
    expect([back.status, back.duplicateOf]).toEqual(['fetched', null]);
    const givenUp = applyFetch({ ...failed, retries: POLICY.maxRetries }, { kind: 'transient', code: 'http-503', status: 503, retryAfterMs: null }, NOW, POLICY).record;
    expect([givenUp.status, givenUp.duplicateOf]).toEqual(['gone', null]);
  });

  it('keeps a gone page gone when its recheck fails again, retries capped at maxRetries + 1', () => {
    const gone = applyFetch({ ...recordIn('retry'), retries: POLICY.maxRetries }, { kind: 'transient', code: 'timeout', status: null, retryAfterMs: null }, NOW, POLICY).record;
    const again = applyFetch(gone, { kind: 'transient', code: 'timeout', status: null, retryAfterMs: null }, NOW + POLICY.goneRecheckMs, POLICY).record;
    expect(again.status).toBe('gone');
    expect(again.retries).toBe(POLICY.maxRetries + 1);
    expect(again.nextFetchAt).toBe(NOW + POLICY.goneRecheckMs + Math.min(POLICY.goneRecheckMs, HOST_RECHECK_MS));
  });

  it('rechecks a page given up after 5xx answers at the rare recheck, one given up after no answer at all after a day', () => {
    const server = applyFetch({ ...recordIn('retry'), retries: POLICY.maxRetries }, { kind: 'transient', code: 'http-500', status: 500, retryAfterMs: null }, NOW, POLICY).record;
    expect(server).toMatchObject({ status: 'gone', nextFetchAt: NOW + POLICY.goneRecheckMs });
    const silent = applyFetch({ ...recordIn('retry'), retries: POLICY.maxRetries }, { kind: 'transient', code: 'connection-refused', status: null, retryAfterMs: null }, NOW, POLICY).record;
    expect(silent).toMatchObject({ status: 'gone', nextFetchAt: NOW + HOST_RECHECK_MS });
    expect(HOST_RECHECK_MS).toBeLessThan(POLICY.goneRecheckMs);
  });

  it('lengthens the interval of an unchanging page by 40 % per fetch up to 90 days, and shortens a changing one by 20 % down to 1 minute', () => {
    let unchanging = applyFetch(newCrawlDbRecord('https://example.com/', 0, 1, NOW, POLICY), success({}), NOW, POLICY).record;
    expect(unchanging.fetchIntervalMs).toBe(POLICY.initialIntervalMs); // first fetch: nothing to compare
    unchanging = applyFetch(unchanging, success({}), NOW + DAY, POLICY).record;
    expect(unchanging.fetchIntervalMs).toBe(Math.round(POLICY.initialIntervalMs * 1.4));
    for (let i = 0; i < 10; i++) unchanging = applyFetch(unchanging, { kind: 'not-modified', freshUntil: null }, NOW + DAY, POLICY).record;
    expect(unchanging.fetchIntervalMs).toBe(POLICY.maxIntervalMs);

    let changing = applyFetch(newCrawlDbRecord('https://example.com/news', 0, 1, NOW, POLICY), success({}), NOW, POLICY).record;
    for (let i = 0; i < 100; i++) {
      const signature = i % 2 === 0 ? SIG_NEW : SIG_OLD;
      changing = applyFetch(changing, success({ signature }), NOW + i, POLICY).record;
      expect(changing.status).toBe('fetched');
    }
    expect(changing.fetchIntervalMs).toBe(POLICY.minIntervalMs);
  });

  it('sets firstFetchAt once and lastFetchAt on every request', () => {
    const first = applyFetch(newCrawlDbRecord('https://example.com/', 0, 1, NOW, POLICY), success({}), NOW, POLICY).record;
    const second = applyFetch(first, { kind: 'not-modified', freshUntil: null }, NOW + DAY, POLICY).record;
    expect([first.firstFetchAt, first.lastFetchAt]).toEqual([NOW, NOW]);
    expect([second.firstFetchAt, second.lastFetchAt]).toEqual([NOW, NOW + DAY]);
  });

  it('turns a duplicate whose original has gone (no duplicate found any more) back into an original, fetched so the search index takes it', () => {
    const result = applyFetch(recordIn('duplicate'), success({}), NOW, POLICY);
    // Was 'notmodified', also an original, but one the index does not add (index-change.ts): the copy stayed unsearchable.
    expect(result.record.status).toBe('fetched');
    expect(result.modified).toBe(false);
    expect(result.record.duplicateOf).toBeNull();
  });

  it('prefers the canonical link over a signature match when both point elsewhere', () => {
    const result = applyFetch(recordIn('fetched'), success({ duplicateOf: OTHER_PAGE, canonicalOf: CANONICAL }), NOW, POLICY);
    expect(result.record.duplicateOf).toBe(CANONICAL);
  });

  it('applies a tighter policy at the next fetch: the stored interval is clamped', () => {
    const tight: FetchSchedulePolicy = { ...POLICY, maxIntervalMs: DAY, goneRecheckMs: DAY };
    const result = applyFetch(recordIn('fetched'), { kind: 'redirect', status: 301, target: null }, NOW, tight);
    expect(result.record.fetchIntervalMs).toBe(DAY);
    expect(result.record.nextFetchAt).toBe(NOW + DAY);
  });

  it('never schedules before freshness, even when the interval is shorter', () => {
    expect(nextFetchAt(NOW, MINUTE, NOW + DAY)).toBe(NOW + DAY);
    expect(nextFetchAt(NOW, DAY, NOW + MINUTE)).toBe(NOW + DAY);
    expect(nextFetchAt(NOW, DAY, null)).toBe(NOW + DAY);
  });
});

// ---- properties ----

const hex16 = fc.constantFrom(SIG_OLD, SIG_NEW, ORIGINAL, OTHER_PAGE, CANONICAL);
const time = fc.integer({ min: NOW - 400 * DAY, max: NOW + 400 * DAY });

const policyArb: fc.Arbitrary<FetchSchedulePolicy> = fc
  .record({
    minIntervalMs: fc.integer({ min: 1_000, max: DAY }),
    spanMs: fc.integer({ min: 0, max: 400 * DAY }),
    initialAt: fc.double({ min: 0, max: 1, noNaN: true }),
    incRate: fc.double({ min: 0, max: 2, noNaN: true }),
    decRate: fc.double({ min: 0, max: 0.95, noNaN: true }),
    maxRetries: fc.integer({ min: 0, max: 8 }),
    retryBaseMs: fc.integer({ min: 1, max: DAY }),
    goneRecheckMs: fc.integer({ min: 1, max: 400 * DAY }),
  })
  .map(({ minIntervalMs, spanMs, initialAt, ...rest }) => ({
    minIntervalMs,
    maxIntervalMs: minIntervalMs + spanMs,
    initialIntervalMs: Math.round(minIntervalMs + spanMs * initialAt),
    ...rest,
  }));

const recordArb = (policy: FetchSchedulePolicy): fc.Arbitrary<CrawlDbRecord> =>
  fc
    .record({
      status: fc.constantFrom(...CRAWL_STATUSES),
      firstFetchAt: fc.option(time),
      lastFetchAt: fc.option(time),
      modifiedAt: fc.option(time),
      // Intervals outside the bounds too: a record written under another policy.
      fetchIntervalMs: fc.integer({ min: 1, max: 1000 * DAY }),
      nextFetchAt: time,
      retries: fc.integer({ min: 0, max: policy.maxRetries + 1 }),
      lastHttpStatus: fc.option(fc.integer({ min: 100, max: 599 })),
      signature: fc.option(hex16),
      simhash: fc.option(hex16),
      target: hex16,
      errorCode: fc.option(fc.constantFrom('timeout', 'http-503', 'http-404')),
    })
    .map(({ target, ...fields }) => ({
      ...newCrawlDbRecord('https://example.com/p', 1, 0.5, NOW, policy),
      ...fields,
      duplicateOf: fields.status === 'duplicate' ? target : null,
      redirectTo: fields.status === 'redir_temp' || fields.status === 'redir_perm' ? target : null,
    }));

const outcomeArb: fc.Arbitrary<FetchOutcome> = fc.oneof(
  fc.record({
    kind: fc.constant('success' as const),
    status: fc.constantFrom(200, 203),
    signature: fc.option(hex16),
    simhash: fc.option(hex16),
    duplicateOf: fc.option(hex16),
    canonicalOf: fc.option(hex16),
    freshUntil: fc.option(time),
  }),
  fc.record({ kind: fc.constant('not-modified' as const), freshUntil: fc.option(time) }),
  fc.record({ kind: fc.constant('redirect' as const), status: fc.constantFrom(301 as const, 302 as const, 303 as const, 307 as const, 308 as const), target: fc.option(hex16) }),
  fc.record({ kind: fc.constant('gone' as const), status: fc.constantFrom(404 as const, 410 as const) }),
  fc.record({ kind: fc.constant('denied' as const), status: fc.constantFrom(401, 403, 451) }),
  fc.record({ kind: fc.constant('broken' as const), code: fc.constantFrom('headers-too-large', 'bad-http-response') }),
  fc.record({
    kind: fc.constant('transient' as const),
    code: fc.constantFrom('timeout', 'http-503', 'http-429', 'connection-reset'),
    status: fc.option(fc.constantFrom(429, 500, 503)),
    retryAfterMs: fc.option(fc.integer({ min: 0, max: 1000 * DAY })),
  }),
  fc.record({ kind: fc.constant('robots-denied' as const), code: fc.constantFrom('robots-disallowed' as const, 'robots-unreachable' as const) }),
);

const caseArb = policyArb.chain((policy) => fc.record({ policy: fc.constant(policy), old: recordArb(policy), outcome: outcomeArb, now: time }));

describe('crawl db transition properties', () => {
  it('keeps every schedule invariant for any record, outcome, time and policy', () => {
    fc.assert(
      fc.property(caseArb, ({ policy, old, outcome, now }) => {
        const { record } = applyFetch(old, outcome, now, policy);
        expect(record.nextFetchAt).toBeGreaterThanOrEqual(now);
        expect(record.fetchIntervalMs).toBeGreaterThanOrEqual(policy.minIntervalMs);
        expect(record.fetchIntervalMs).toBeLessThanOrEqual(policy.maxIntervalMs);
        if ((outcome.kind === 'success' || outcome.kind === 'not-modified') && outcome.freshUntil !== null) {
          expect(record.nextFetchAt).toBeGreaterThanOrEqual(outcome.freshUntil);
        }
        expect(record.retries).toBeLessThanOrEqual(policy.maxRetries + 1);
        expect(record.retries).toBeGreaterThanOrEqual(0);
        if (record.status === 'duplicate') expect(record.duplicateOf).not.toBeNull();
        else if (record.status === 'retry') expect(record.duplicateOf).toBe(old.duplicateOf);
        else expect(record.duplicateOf).toBeNull();
        if (record.redirectTo !== null) expect(['redir_temp', 'redir_perm']).toContain(record.status);
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('never changes url, depth or score, and never mutates the old record', () => {
    fc.assert(
      fc.property(caseArb, ({ policy, old, outcome, now }) => {
        const before = structuredClone(old);
        const { record } = applyFetch(old, outcome, now, policy);
        expect(old).toEqual(before);
        expect([record.url, record.depth, record.score]).toEqual([old.url, old.depth, old.score]);
      }),
      { seed, numRuns: 500 },
    );
  });
});
