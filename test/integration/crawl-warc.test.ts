/**
 * The web archive of a real crawl: `petrel crawl` (queue server and fetchers as child processes) over
 * the test web, twice on one data directory with the web changed in between, and every WARC file read
 * by webrecorder's warcio (npm) with every digest recomputed. Each capture is matched one to one with a
 * request the test web logged (so nothing is archived that was never requested and nothing requested
 * is missing); a response's payload is the bytes the test web sent (the SHA-1 it logged); the recrawl's
 * 304s are server-not-modified revisits of the first capture, its exact copies identical-payload-digest
 * revisits of the original; the crawl database points every fetched URL at its capture. `--no-warc`
 * writes no archive and the fetchers build no records.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { urlHash } from '../../shared/url-hash.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { sha1Bytes } from '../../queue-server/warc/digest-index.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';
import { urlOf } from '../support/request-log.js';
import { checkWarcPath, type ParsedRecord } from '../support/warc-exchange.js';

const PAGES = 30;
const NOT_MODIFIED = 'http://netpreserve.org/warc/1.1/revisit/server-not-modified';
const IDENTICAL = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';

interface Summary {
  pagesFetched: number;
  notModified: number;
  requests: number;
  warcRecords: number;
  warcBytes: number;
  warcInvalid: number;
}

/** A request record and the response or revisit after it, as warcio read them. */
interface Capture {
  readonly url: string;
  readonly request: ParsedRecord;
  readonly response: ParsedRecord;
  readonly file: string;
}

interface Pass {
  readonly summary: Summary;
  readonly log: RequestLogEntry[];
  readonly files: string[];
  readonly captures: Capture[];
}

function hexOf(digest: string | undefined): string {
  return sha1Bytes(digest ?? '').toString('hex');
}

/** Pairs each file's records: warcinfo first, then request + response/revisit, concurrent to each other. */
function capturesOf(file: string, records: readonly ParsedRecord[]): Capture[] {
  expect(records[0]?.type).toBe('warcinfo');
  const out: Capture[] = [];
  for (let i = 1; i < records.length; i += 2) {
    const request = records[i]!;
    const response = records[i + 1];
    expect(request.type).toBe('request');
    expect(response === undefined ? 'missing' : response.type).toMatch(/^(response|revisit)$/);
    expect(request.headers.get('WARC-Concurrent-To')).toBe(response!.headers.get('WARC-Record-ID'));
    expect(request.headers.get('WARC-Target-URI')).toBe(response!.headers.get('WARC-Target-URI'));
    out.push({ url: request.headers.get('WARC-Target-URI')!, request, response: response!, file });
  }
  return out;
}

/** The log's answered GET requests of each URL, in order. */
function requestsByUrl(log: readonly RequestLogEntry[]): Map<string, RequestLogEntry[]> {
  const byUrl = new Map<string, RequestLogEntry[]>();
  for (const entry of log) {
    if (entry.method !== 'GET' || entry.status === 0) continue;
    const url = urlOf(entry);
    byUrl.set(url, [...(byUrl.get(url) ?? []), entry]);
  }
  return byUrl;
}

describe('the web archive of a crawl', () => {
  let web: TestWeb;
  let dataDir: string;
  let first: Pass;
  let second: Pass;
  /** Every record of every file, for identical-payload revisits that refer across files. */
  const all: ParsedRecord[] = [];

  const crawl = async (label: string, extra: string[] = [], dir = dataDir): Promise<{ summary: Summary; log: RequestLogEntry[] }> => {
    web.clearLog();
    const summaryFile = join(dir, `../${label}.json`);
    const run = await runPetrel([
      'crawl', '--seed', web.seeds[0]!, '--seed', `${web.origins[1]!}/index.html`, '--data', dir, '--scope', 'host', '--delay-ms', '0',
      '--host-concurrency', '2', '--fetchers', '2', '--retry-base-ms', '100ms', '--max-retries', '2', '--summary-json', summaryFile, '--no-progress', ...extra,
    ]);
    expect(run.code, run.stderr).toBe(0);
    return { summary: JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary, log: [...web.log] };
  };

  const readPass = async (run: { summary: Summary; log: RequestLogEntry[] }, before: ReadonlySet<string>): Promise<Pass> => {
    const files = readdirSync(join(dataDir, 'warc')).filter((name) => name.endsWith('.warc.gz') && !before.has(name)).sort();
    const captures: Capture[] = [];
    for (const file of files) {
      const records = await checkWarcPath(join(dataDir, 'warc', file), all);
      all.push(...records);
      captures.push(...capturesOf(file, records));
    }
    return { ...run, files, captures };
  };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ hosts: 2, pagesPerHost: PAGES });
    dataDir = join(tempDir('crawl-warc'), 'data');
    first = await readPass(await crawl('first'), new Set());
    web.setGeneration(1);
    second = await readPass(await crawl('second'), new Set(first.files));
  }, 240_000);

  afterAll(async () => {
    await web?.close();
  });

  it('archives one request and one response or revisit for every answered request, and nothing else', () => {
    for (const pass of [first, second]) {
      const requested = requestsByUrl(pass.log);
      const archived = new Map<string, number>();
      for (const capture of pass.captures) archived.set(capture.url, (archived.get(capture.url) ?? 0) + 1);
      expect(Object.fromEntries([...archived].sort())).toEqual(Object.fromEntries([...requested].map(([url, entries]) => [url, entries.length] as const).sort()));
      expect(pass.summary.warcRecords).toBe(2 * pass.captures.length);
      expect(pass.summary.warcInvalid).toBe(0);
      const bytes = pass.captures.reduce((sum, c) => sum + c.request.length + c.response.length, 0);
      expect(pass.summary.warcBytes).toBe(bytes);
    }
    expect(first.captures.length).toBeGreaterThan(2 * PAGES);
  });

  it('stores the bytes the test web sent, with its status, address and the request as sent', () => {
    let compared = 0;
    for (const pass of [first, second]) {
      const requested = requestsByUrl(pass.log);
      const seen = new Map<string, number>();
      for (const capture of pass.captures) {
        const n = seen.get(capture.url) ?? 0;
        seen.set(capture.url, n + 1);
        const entry = requested.get(capture.url)![n]!;
        const { request, response } = capture;
        expect(request.headers.get('WARC-IP-Address')).toBe(entry.host.split(':')[0]);
        expect(response.headers.get('WARC-IP-Address')).toBe(entry.host.split(':')[0]);
        const requestLine = request.block.toString('latin1').split('\r\n')[0];
        expect(requestLine).toBe(`GET ${entry.path} HTTP/1.1`);
        expect(request.block.toString('latin1')).toContain(`\r\nuser-agent: ${entry.userAgent}\r\n`);
        expect(response.httpStatus).toBe(entry.status);
        if (response.type === 'revisit') continue;
        if (response.headers.get('WARC-Truncated') === 'length') {
          // Cut at --max-body-bytes (2 MiB): the large page, whose download was aborted there.
          expect(response.payload!.length).toBe(2 * 1024 * 1024);
          continue;
        }
        expect(entry.bodySha1, capture.url).not.toBeNull();
        expect(hexOf(response.headers.get('WARC-Payload-Digest'))).toBe(entry.bodySha1);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(2 * PAGES);
    expect(first.captures.some((c) => c.response.headers.get('WARC-Truncated') === 'length')).toBe(true);
  });

  it('archives robots.txt, redirects and error statuses with their responses', () => {
    const statuses = new Set(first.captures.map((c) => c.response.httpStatus));
    for (const status of [200, 301, 302, 404, 410, 500, 503]) expect(statuses).toContain(status);
    expect(first.captures.filter((c) => c.url.endsWith('/robots.txt'))).toHaveLength(2);
  });

  it('makes every 304 of the recrawl a server-not-modified revisit of the capture it revalidated', () => {
    const firstById = new Map(first.captures.map((c) => [c.response.headers.get('WARC-Record-ID')!, c]));
    const notModified = second.captures.filter((c) => c.response.httpStatus === 304);
    expect(notModified.length).toBe(second.summary.notModified);
    expect(notModified.length).toBeGreaterThan(0);
    for (const capture of notModified) {
      expect(capture.response.type).toBe('revisit');
      expect(capture.response.headers.get('WARC-Profile')).toBe(NOT_MODIFIED);
      const original = firstById.get(capture.response.headers.get('WARC-Refers-To') ?? '');
      expect(original?.url, capture.url).toBe(capture.url);
      expect(original!.response.type).toBe('response');
      expect(capture.response.headers.get('WARC-Refers-To-Target-URI')).toBe(capture.url);
      expect(capture.response.headers.get('WARC-Refers-To-Date')).toBe(original!.response.headers.get('WARC-Date'));
    }
    // Only 304s become server-not-modified revisits.
    expect(second.captures.filter((c) => c.response.headers.get('WARC-Profile') === NOT_MODIFIED)).toHaveLength(notModified.length);
  });

  it('keeps a page\'s capture through failures that were retried: its 304 refers to its last 200, and the crawl database and export still show that page', async () => {
    // The flaky pages answer 500 twice after the change, then 304 (--max-retries 2 lets them recover).
    const flaky = web.model.changes(1).flaky.filter((change) => second.captures.some((c) => c.url === change.url));
    expect(flaky.length).toBeGreaterThan(0);
    const exported = await runPetrel(['export', '--data', dataDir]);
    expect(exported.code, exported.stderr).toBe(0);
    const pageRecords = new Map(exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: number | null }).map((record) => [record.url, record]));
    const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
    try {
      for (const { url } of flaky) {
        expect(second.captures.filter((c) => c.url === url).map((c) => c.response.httpStatus), url).toEqual([500, 500, 304]);
        const revalidated = first.captures.find((c) => c.url === url && c.response.httpStatus === 200)!;
        const id = revalidated.response.headers.get('WARC-Record-ID');
        expect(second.captures.find((c) => c.url === url && c.response.httpStatus === 304)!.response.headers.get('WARC-Refers-To')).toBe(id);
        expect(crawlDb.get(urlHash(url))?.warc?.recordId, url).toBe(id);
        expect(pageRecords.get(url)?.status, url).toBe(200);
      }
    } finally {
      crawlDb.close();
    }
  });

  it('makes an exact duplicate an identical-payload-digest revisit of the first response with that payload', () => {
    const copies = web.model.changes(1).exactCopies;
    const byUrl = new Map(second.captures.map((c) => [c.url, c]));
    let checked = 0;
    for (const copy of copies) {
      const capture = byUrl.get(copy.url);
      if (capture === undefined) continue;
      expect(capture.response.type, copy.url).toBe('revisit');
      expect(capture.response.headers.get('WARC-Profile')).toBe(IDENTICAL);
      const original = all.find((r) => r.headers.get('WARC-Record-ID') === capture.response.headers.get('WARC-Refers-To'))!;
      expect(original.type).toBe('response');
      expect(original.headers.get('WARC-Target-URI')).toBe(copy.of);
      expect(original.headers.get('WARC-Payload-Digest')).toBe(capture.response.headers.get('WARC-Payload-Digest'));
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
    // Every identical-payload revisit is a 2xx whose payload was stored before: never a payload seen for the first time.
    const digests = new Set<string>();
    for (const capture of [...first.captures, ...second.captures]) {
      const digest = capture.response.headers.get('WARC-Payload-Digest')!;
      if (capture.response.headers.get('WARC-Profile') === IDENTICAL) expect(digests.has(digest)).toBe(true);
      if (capture.response.type === 'response' && capture.response.httpStatus === 200) digests.add(digest);
    }
  });

  it('points every fetched URL of the crawl database at its latest capture', () => {
    const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
    const byId = new Map([...first.captures, ...second.captures].map((c) => [c.response.headers.get('WARC-Record-ID')!, c]));
    let pointed = 0;
    try {
      for (const [hash, record] of crawlDb.entries()) {
        if (record.status !== 'fetched' && record.status !== 'notmodified') continue;
        expect(record.warc, record.url).not.toBeNull();
        const capture = byId.get(record.warc!.recordId)!;
        expect(capture.url).toBe(record.url);
        expect(capture.file).toBe(record.warc!.file);
        expect(capture.request.offset).toBe(record.warc!.offset);
        expect(Buffer.from(urlHash(record.url)).equals(Buffer.from(hash))).toBe(true);
        pointed++;
      }
    } finally {
      crawlDb.close();
    }
    expect(pointed).toBeGreaterThan(2 * PAGES - 10);
  });

  it('with --no-warc keeps no archive and saves the setting', async () => {
    const dir = join(tempDir('crawl-no-warc'), 'data');
    const run = await crawl('no-warc', ['--no-warc'], dir);
    expect(run.summary.pagesFetched).toBeGreaterThan(2 * PAGES - 10);
    expect(run.summary.warcRecords).toBe(0);
    expect(run.summary.warcBytes).toBe(0);
    expect(existsSync(join(dir, 'warc'))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, 'crawl.json'), 'utf8')).settings.warc).toBe(false);
  }, 120_000);
});
