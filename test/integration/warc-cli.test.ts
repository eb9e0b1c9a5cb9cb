/**
 * The archive's commands on a data directory filled the way the queue server fills it: two passes over
 * the test web (real HTTP on loopback) stored through WarcArchive with the crawl database keeping each
 * URL's location; the second pass revalidates with If-None-Match (304s become server-not-modified
 * revisits) after the web changed (exact copies become identical-payload revisits, changed pages new
 * responses). Then the real `petrel` binary: `warc index` (compared line by line with warcio's own CDXJ
 * indexer), `warc get` (every kind of capture, --at, bad input), `export --format warc` (parsed by warcio,
 * digests recomputed, every revisit's original inside).
 */
import { spawn } from 'node:child_process';
import { createReadStream, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CDXIndexer } from 'warcio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlHash } from '../../shared/url-hash.js';
import { buildCapture } from '../../shared/warc/exchange.js';
import { fieldValue, parseHead } from '../../shared/warc/http-head.js';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { newCrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { WarcArchive } from '../../queue-server/warc/warc-archive.js';
import { surtKey } from '../../queue-server/warc/cdxj.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, PETREL_BIN, tempDir } from '../support/petrel-process.js';
import { checkWarcFile, checkWarcPath, fetchExchange, type ParsedRecord } from '../support/warc-exchange.js';

const PASS1 = Date.UTC(2026, 5, 1, 12, 0, 0);
const PASS2 = Date.UTC(2026, 6, 1, 12, 0, 0);
const PASS3 = Date.UTC(2026, 7, 1, 12, 0, 0);

let web: TestWeb;
let dataDir = '';
let urls: string[] = [];
/** What each URL answered in each pass, straight from the server. */
const bodies = new Map<string, { pass1: Buffer; etag: string | null; pass2: Buffer | null; status2: number }>();
let copies: { url: string; of: string }[] = [];
let changed: string[] = [];
/** A third pass: an exact copy revalidated (its 304 refers to its identical-payload revisit), and a URL differing only in case from a page. */
let chained: { url: string; of: string } | null = null;
let lower = '';
let upper = '';

function run(args: string[]): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PETREL_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: err }));
  });
}

function bodyOf(response: Buffer): Buffer {
  return response.subarray(response.indexOf('\r\n\r\n') + 4);
}

beforeAll(async () => {
  assertBuilt();
  web = await startTestWeb({ hosts: 1, pagesPerHost: 40 });
  const main = web.hostByRole.main;
  urls = [...web.model.reachable({ seeds: web.seeds, inScope: (url) => url.startsWith(`${main}/`), maxDepth: 3 }).keys()];
  urls.push(`${main}/robots.txt`, `${main}/no-such-page.html`);
  dataDir = tempDir('warc-cli');
  const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
  const archive = WarcArchive.open({ dataDir, maxFileBytes: 64 * 1024, warcinfo: { software: 'Petrel/test', operator: 'ops@example.org', userAgent: null, settings: { pass: 1 } } });
  const store = async (url: string, at: number, headers: Record<string, string> = {}) => {
    const exchange = await fetchExchange(url, { headers });
    const capture = buildCapture({ ...exchange, startedAt: at }, { maxBodyBytes: 2 * 1024 * 1024 });
    const hash = urlHash(url);
    const record = crawlDb.get(hash) ?? newCrawlDbRecord(url, 0, 1, at, DEFAULT_FETCH_SCHEDULE);
    const stored = archive.store(capture, record.warc, at);
    crawlDb.put(hash, { ...record, lastHttpStatus: capture.status, warc: stored.location });
    return { exchange, capture };
  };
  for (const [i, url] of urls.entries()) {
    const { exchange } = await store(url, PASS1 + i * 1000);
    bodies.set(url, { pass1: Buffer.concat(exchange.responseBody), etag: fieldValue(parseHead(exchange.responseHead), 'etag'), pass2: null, status2: 0 });
  }
  archive.commit();
  crawlDb.commit();
  web.setGeneration(1);
  const changes = web.model.changes(1);
  const etags2 = new Map<string, string | null>();
  copies = changes.exactCopies.filter((copy) => urls.includes(copy.url) && urls.includes(copy.of));
  changed = changes.changedText.filter((url) => urls.includes(url));
  archive.setSettings({ pass: 2 });
  for (const [i, url] of urls.entries()) {
    // Revalidate with the ETag of the first pass (a changed page's or a copy's ETag changed: it comes in full).
    const first = bodies.get(url)!;
    const { exchange, capture } = await store(url, PASS2 + i * 1000, first.etag === null ? {} : { 'if-none-match': first.etag });
    first.pass2 = Buffer.concat(exchange.responseBody);
    first.status2 = capture.status;
    if (copies.some((copy) => copy.url === url)) etags2.set(url, fieldValue(parseHead(exchange.responseHead), 'etag'));
  }
  archive.setSettings({ pass: 3 });
  chained = copies.at(-1)!;
  await store(chained.url, PASS3, { 'if-none-match': etags2.get(chained.url)! });
  lower = urls.find((url) => /\/section-\d+\/page-\d+\.html$/.test(url))!;
  upper = lower.replace(/\/section-/, '/SECTION-');
  await store(upper, PASS3 + 1000);
  archive.close();
  crawlDb.close();
}, 120_000);

afterAll(async () => {
  await web?.close();
});

describe('petrel warc index', () => {
  it('writes the CDXJ index warcio itself writes for the same files, sorted bytewise', async () => {
    const result = await run(['warc', 'index', '--data', dataDir]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const warcDir = join(dataDir, 'warc');
    const ours = readFileSync(join(warcDir, 'index.cdxj'), 'utf8').split('\n').filter((line) => line !== '');
    expect(result.stdout.toString()).toBe(`${ours.length} captures indexed in ${join(warcDir, 'index.cdxj')}\n`);
    const files = readdirSync(warcDir).filter((name) => name.endsWith('.warc.gz')).sort();
    expect(files.length).toBeGreaterThan(2); // 64 KiB files: the archive rotated
    const indexer = new CDXIndexer({ format: 'cdxj' });
    const theirs: string[] = [];
    for await (const entry of indexer.iterIndex(files.map((filename) => ({ filename, reader: createReadStream(join(warcDir, filename)) })))) {
      theirs.push(indexer.serializeCDXJ(entry).trimEnd());
    }
    const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    expect(theirs.length).toBeGreaterThan(0);
    expect(ours).toEqual([...theirs].sort(bytewise));
    // Two captures per URL (a response or revisit each pass), none for the requests or warcinfo records.
    // Two passes over every URL, and the third pass's two captures.
    expect(ours).toHaveLength(2 * urls.length + 2);
    expect(ours.filter((line) => line.includes('"mime":"warc/revisit"')).length).toBeGreaterThan(urls.length / 2);
  });
});

describe('petrel warc get', () => {
  it('prints the stored response of a page, the exact bytes the server sent, following a 304 revisit to it', async () => {
    const url = web.seeds[0]!;
    expect(bodies.get(url)!.status2).toBe(304);
    const result = await run(['warc', 'get', '--data', dataDir, url]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(bodyOf(result.stdout)).toEqual(bodies.get(url)!.pass1);
    expect(result.stderr).toMatch(/captured 2026-07-01T.*\(a server-not-modified revisit of .* 2026-06-01T/);
  });

  it('prints the capture nearest --at: the old content of a changed page, or the new one', async () => {
    expect(changed.length).toBeGreaterThan(0);
    const url = changed[0]!;
    const { pass1, pass2 } = bodies.get(url)!;
    expect(pass2).not.toEqual(pass1);
    expect(bodyOf((await run(['warc', 'get', '--data', dataDir, '--at', '20260601', url])).stdout)).toEqual(pass1);
    expect(bodyOf((await run(['warc', 'get', '--data', dataDir, '--at', '2026-06-20T00:00:00Z', url])).stdout)).toEqual(pass2);
    expect(bodyOf((await run(['warc', 'get', '--data', dataDir, url])).stdout)).toEqual(pass2);
  });

  it('prints an exact copy’s own head with the payload of the capture it duplicates', async () => {
    expect(copies.length).toBeGreaterThan(0);
    const { url, of } = copies[0]!;
    expect(bodies.get(url)!.pass2).toEqual(bodies.get(of)!.pass1);
    // The second pass's capture (the third pass revalidated it: the next test).
    const result = await run(['warc', 'get', '--data', dataDir, '--at', '20260701', url]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('identical-payload-digest revisit of');
    expect(bodyOf(result.stdout)).toEqual(bodies.get(of)!.pass1);
    expect(result.stdout.toString('latin1')).toContain('\r\nLast-Modified: Mon, 01 Jul 2024');
  });

  it('follows a 304 of an exact copy through its identical-payload revisit to the payload, with the copy\'s own head', async () => {
    const result = await run(['warc', 'get', '--data', dataDir, chained!.url]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('server-not-modified revisit of');
    expect(result.stdout.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
    expect(bodyOf(result.stdout)).toEqual(bodies.get(chained!.of)!.pass1);
  });

  it('picks the URL asked for among URLs whose SURT key folds together, and finds a URL given with raw non-ASCII characters', async () => {
    // /SECTION-… was captured last (a 404), under the same SURT key as /section-…: it is not what /section-… asks for.
    const asked = await run(['warc', 'get', '--data', dataDir, lower]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toContain(`${lower} captured`);
    const other = await run(['warc', 'get', '--data', dataDir, upper]);
    expect(other.stderr).toContain(`${upper} captured`);
    expect(other.stdout.toString('latin1')).toMatch(/^HTTP\/1\.1 404 /);
    expect(surtKey('http://127.0.0.2:8089/ünï.html')).toBe(surtKey('http://127.0.0.2:8089/%C3%BCn%C3%AF.html'));
    expect(surtKey('http://127.0.0.2:8089/ünï.html')).toBe('2,0,0,127:8089)/%c3%bcn%c3%af.html');
  });

  it('answers bad input and unknown URLs with one line and a non-zero status', async () => {
    const cases: [string[], number, RegExp][] = [
      [['warc', 'get', '--data', dataDir, `${web.hostByRole.main}/never-crawled.html`], 1, /^petrel warc get: WARC_NOT_FOUND: no capture of http:\/\/.*never-crawled\.html in the archive\n$/],
      [['warc', 'get', '--data', dataDir, '--at', 'yesterday', web.seeds[0]!], 2, /^petrel warc get: --at wants a UTC time .* got "yesterday"\n$/],
      [['warc', 'get', '--data', dataDir, '--at', '20261399', web.seeds[0]!], 2, /^petrel warc get: --at wants/],
      [['warc', 'get', '--data', dataDir, 'ftp://example.org/'], 2, /^petrel warc get: not an http\(s\) URL: "ftp:\/\/example\.org\/"\n$/],
      [["warc", "get", "--data", join(dataDir, "missing"), web.seeds[0]!], 2, /^petrel warc: no data directory at .*missing: give --data DIR/],
      [['warc', 'index', '--data', tempDir('warc-empty')], 2, /^petrel warc: no web archive at .*warc: nothing was archived/],
      [['export', '--data', tempDir('warc-empty'), '--format', 'warc'], 2, /^petrel export: no crawldb\.btree in .*has a crawl run in it yet\?\n$/],
    ];
    for (const [args, code, message] of cases) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(code);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });
});

describe('petrel export --format warc', () => {
  it('streams one WARC of each URL’s latest capture that warcio parses, digests matching, each revisit after its original', async () => {
    const result = await run(['export', '--data', dataDir, '--format', 'warc']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const records = await checkWarcFile(result.stdout);
    expect(records[0]!.type).toBe('warcinfo');
    const captures = records.filter((r) => r.type === 'response' || r.type === 'revisit');
    expect(records.filter((r) => r.type === 'request')).toHaveLength(captures.length);
    const latest = new Map<string, ParsedRecord>();
    for (const record of captures) latest.set(record.headers.get('WARC-Target-URI')!, record);
    // Every URL once, except originals pulled in for exact copies (their own URL may have changed since).
    for (const url of urls) expect(latest.has(url), url).toBe(true);
    for (const { url } of copies) expect(latest.get(url)!.headers.get('WARC-Profile')).toMatch(/identical-payload-digest$/);
    // No server-not-modified revisit: the crawl database points at the content those revalidated.
    expect(captures.some((r) => r.headers.get('WARC-Profile')?.endsWith('server-not-modified'))).toBe(false);
    for (const url of changed) expect(latest.get(url)!.payload).toEqual(bodies.get(url)!.pass2);
  });

  it('with --all streams every WARC file whole, which warcio reads as one', async () => {
    const result = await run(['export', '--data', dataDir, '--format', 'warc', '--all']);
    expect(result.code).toBe(0);
    const records = await checkWarcFile(result.stdout);
    const files = readdirSync(join(dataDir, 'warc')).filter((name) => name.endsWith('.warc.gz')).sort();
    let perFile = 0;
    const seen: ParsedRecord[] = [];
    for (const name of files) {
      const one = await checkWarcPath(join(dataDir, 'warc', name), seen);
      seen.push(...one);
      perFile += one.length;
    }
    expect(records).toHaveLength(perFile);
    expect(records.filter((r) => r.type === 'warcinfo')).toHaveLength(files.length);
  });
});
