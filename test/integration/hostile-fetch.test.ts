/**
 * The fetcher against the hostile host: every case through the real `fetchItem` with a real undici
 * Agent on loopback, small limits, and the host's ground truth (scripts/test-web/hostile/cases.ts).
 * Cases run concurrently; the slow ones are ended by the total time limit, not by the server. What a
 * compression bomb or an endless body costs in memory is measured on the fetch alone, in a child
 * process (test/support/fetch-in-child.ts). How long cases take is for scripts/bench-hostile.ts.
 */
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrustedOrigins } from '../../fetcher/address-guard.js';
import { createCrawlAgent, type DownloadOptions } from '../../fetcher/download.js';
import { fetchItem } from '../../fetcher/fetch-item.js';
import { DEFAULT_MAX_LINKS_PER_PAGE, LIMITS, itemResultSchema, type ItemResult } from '../../shared/protocol.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { bombBody } from '../../scripts/test-web/hostile/bombs.js';
import { CHARSET_TITLES, SLOW_STEPS, type HostileCase } from '../../scripts/test-web/hostile/cases.js';
import { linkBombPage, longUrlPage, nestedPage, sessionIdPage } from '../../scripts/test-web/hostile/content.js';
import { fetchInChild } from '../support/fetch-in-child.js';

const OPTIONS: DownloadOptions = {
  userAgent: 'Petrel/0.1.0 (hostile-fetch test)',
  maxBodyBytes: 2 * 1024 * 1024,
  connectTimeoutMs: 2_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  // Long enough that forty cases fetched at once on a loaded two-core machine still finish; the slow
  // cases (one byte every 2 s for a minute) show that the limit, not the server, ends them.
  totalTimeoutMs: 8_000,
};
/**
 * How much one fetch of a compression bomb (1 GiB inflated) or an endless body may raise the peak RSS
 * of the process that fetches it: the 2 MiB body limit, decompression and socket buffers, a fresh
 * process's first allocations. A fetcher that kept the inflated bomb would need 1 GiB more.
 */
const FETCH_PEAK_GROWTH_BOUND = 64 * 1024 * 1024;

let web: TestWeb;
let agent: Agent;

beforeAll(async () => {
  web = await startTestWeb({ pagesPerHost: 5 });
  // The hostile host is on loopback: trusted as a crawl trusts its seeds' hosts (address-guard.ts).
  const trustedOrigins = new TrustedOrigins();
  trustedOrigins.hold(web.hostile.origin);
  agent = createCrawlAgent({ ...OPTIONS, connectionsPerOrigin: 64, addressPolicy: { allowAll: false, trustedOrigins, resolve: new Map() } });
  // The server shares this process: build its big bodies now, so their cost is not charged to the
  // fetches' time limits (the bombs take about a second of CPU in all, once per process).
  await Promise.all((['gzip', 'deflate', 'br'] as const).map((encoding) => bombBody(encoding)));
  linkBombPage();
  nestedPage();
  sessionIdPage();
  longUrlPage();
});
afterAll(async () => {
  await agent.close();
  await web.close();
});

async function fetchPath(path: string, kind: 'page' | 'robots' = 'page'): Promise<{ result: ItemResult; ms: number }> {
  const started = performance.now();
  const result = await fetchItem({ dispatcher: agent, download: OPTIONS }, 0, { i: 0, url: `${web.hostile.origin}${path}`, kind, depth: 0, validators: null });
  return { result, ms: performance.now() - started };
}

function mediaType(result: ItemResult): string | null {
  return result.contentType === null ? null : result.contentType.split(';')[0]!.trim().toLowerCase();
}

/** Asserts a result against the case's ground truth, plus what holds for every result. */
function expectOutcome(entry: HostileCase, result: ItemResult): void {
  const label = entry.path.slice(0, 60);
  expect(itemResultSchema.safeParse(result).success, `${label}: valid on the wire`).toBe(true);
  const expected = entry.expect;
  if (expected.kind === 'error') {
    expect({ path: label, status: result.status, code: result.error?.code }).toEqual({ path: label, status: null, code: expected.code });
    return;
  }
  expect({ path: label, status: result.status, error: result.error, truncated: result.truncated }).toEqual({ path: label, status: expected.status, error: null, truncated: expected.truncated });
  if (expected.mediaType !== null) expect(mediaType(result), label).toBe(expected.mediaType);
  if (expected.redirectTo !== undefined) expect(result.redirectTo, label).toBe(expected.redirectTo);
  if (expected.retryAfterMs !== undefined) expect(result.retryAfterMs, label).toBe(expected.retryAfterMs);
  if (expected.title !== undefined) expect(result.page?.title, label).toBe(expected.title);
  expect(result.bytes, label).toBeLessThanOrEqual(OPTIONS.maxBodyBytes);
  for (const link of result.links) {
    expect(link.length, label).toBeLessThanOrEqual(LIMITS.urlChars);
    expect(link, label).toMatch(/^https?:\/\/[^\s<>"]+$/);
  }
}

describe('the fetcher against the hostile host', () => {
  it('ends every case as its ground truth says, the slow ones by the total time limit, concurrently', async () => {
    // Flaky cases count requests; this is the first request each URL gets.
    web.hostile.state.reset();
    web.clearLog();
    const cases = web.hostile.cases.filter((entry) => entry.path !== '/robots.txt');
    const results = await Promise.all(cases.map(async (entry) => ({ entry, ...(await fetchPath(entry.path)) })));
    const failures: string[] = [];
    for (const { entry, result, ms } of results) {
      try {
        expectOutcome(entry, result);
      } catch (error) {
        failures.push(`${entry.path.slice(0, 60)} (${Math.round(ms)} ms, ${result.status ?? result.error?.code}): ${String(error).split('\n')[0]}`);
      }
    }
    expect(failures).toEqual([]);
    // The slow body (one byte every 2 s for a minute) was cut off by the fetcher's total time limit
    // before the server had sent it all (the body and header timeouts never fire between its bytes).
    const slowBody = () => web.log.find((entry) => entry.host === web.hostile.authority && entry.path === '/body/slow.html');
    await expect.poll(slowBody, { timeout: 15_000 }).toBeDefined();
    expect(slowBody()!.bytes).toBeGreaterThan(0);
    expect(slowBody()!.bytes).toBeLessThan(SLOW_STEPS);
  }, 30_000);

  it('stops inflating compression bombs at the body limit, having read about a kilobyte per 2 MiB, holding only the limit', async () => {
    for (const path of ['/bomb/gzip.html', '/bomb/deflate.html', '/bomb/br.html', '/body/endless.html']) {
      const { result, peakGrowthBytes } = await fetchInChild(`${web.hostile.origin}${path}`, OPTIONS);
      console.log(`hostile-fetch: ${path} raised the fetching process's peak RSS by ${(peakGrowthBytes / 2 ** 20).toFixed(1)} MiB`);
      expect(peakGrowthBytes, `${path}: peak RSS growth of the fetch`).toBeLessThan(FETCH_PEAK_GROWTH_BOUND);
      expect({ path, status: result.status, bytes: result.bytes, truncated: result.truncated }).toEqual({ path, status: 200, bytes: OPTIONS.maxBodyBytes, truncated: true });
      if (path.startsWith('/bomb/')) {
        expect(result.wireBytes, path).toBeLessThan(256 * 1024);
        // Zeros are binary: not handed to the HTML parser.
        expect(result.page, path).toBeNull();
      }
    }
  });

  it('decodes charsets per WHATWG: meta Shift_JIS, a UTF-16 BOM over the header, invalid and lying UTF-8 as U+FFFD', async () => {
    const titles = await Promise.all(['shift-jis', 'utf-16', 'invalid-utf8', 'lying'].map(async (name) => (await fetchPath(`/charset/${name}.html`)).result.page?.title));
    expect(titles).toEqual([CHARSET_TITLES.shiftJis, CHARSET_TITLES.utf16, CHARSET_TITLES.invalidUtf8, CHARSET_TITLES.lying]);
  });

  it('keeps markup in strings as bounded text and never emits javascript:, data: or vbscript: links', async () => {
    const [script, breakout, schemes, huge] = await Promise.all(
      ['script-title', 'attribute-breakout', 'scheme-links', 'huge-title'].map(async (name) => (await fetchPath(`/markup/${name}.html`)).result),
    );
    expect(script!.page?.title).toBe('<script>alert(1)</script><img src=x onerror=alert(2)>');
    expect(breakout!.links.length).toBeGreaterThan(0);
    for (const link of breakout!.links) expect(link.startsWith(`${web.hostile.origin}/markup/target.html`)).toBe(true);
    expect(schemes!.links).toEqual([`${web.hostile.origin}/markup/fine.html`]);
    expect(huge!.page?.title).toBe('T'.repeat(LIMITS.titleChars));
  });

  it('caps link bombs: links per page, URL length, and the parser work on 200,000 nested elements and on end tags that close nothing', async () => {
    const bomb = (await fetchPath('/links/bomb.html')).result;
    expect(bomb.links).toHaveLength(DEFAULT_MAX_LINKS_PER_PAGE);
    // Every link whose start tag is whole within the body limit is counted (all distinct here).
    const withinLimit = linkBombPage().subarray(0, OPTIONS.maxBodyBytes).toString('latin1');
    expect(bomb.page?.outlinks).toBe(withinLimit.match(/<a href="[^"]*">/g)!.length);
    expect(bomb.page!.outlinks).toBeGreaterThan(40_000);

    const long = (await fetchPath('/links/long-url.html')).result;
    expect(long.links).toEqual([`${web.hostile.origin}/links/short.html`]);

    const sessions = (await fetchPath('/links/session-ids.html')).result;
    expect(sessions.links).toHaveLength(DEFAULT_MAX_LINKS_PER_PAGE);

    const nested = await fetchPath('/links/nested.html');
    expect(nested.result.truncated).toBe(true);
    expect(nested.result.links).toEqual([`${web.hostile.origin}/links/before-nesting.html`]);

    // End tags that close nothing, each a scan of the parser's stack of 31,000: cut once the parse work
    // passes the budget (unbounded, this 1.9 MB page took 10 s of CPU).
    const unclosed = await fetchPath('/links/unclosed.html');
    expect(unclosed.result.truncated).toBe(true);
    expect(unclosed.result.links).toEqual([`${web.hostile.origin}/links/before-unclosed.html`]);
  });

  it('records non-HTML and binary bodies with their content type and parses nothing', async () => {
    const [pdf, binary, empty] = await Promise.all(['/fault/doc.pdf', '/fault/binary.html', '/fault/empty.html'].map(async (path) => (await fetchPath(path)).result));
    expect({ status: pdf!.status, type: mediaType(pdf!), page: pdf!.page, signature: typeof pdf!.signature }).toEqual({ status: 200, type: 'application/pdf', page: null, signature: 'string' });
    expect({ status: binary!.status, type: mediaType(binary!), page: binary!.page, bytes: binary!.bytes }).toEqual({ status: 200, type: 'text/html', page: null, bytes: 4096 });
    expect({ status: empty!.status, bytes: empty!.bytes, links: empty!.links }).toEqual({ status: 200, bytes: 0, links: [] });
  });

  it('keeps the first 512 KiB of a 600 KiB robots.txt, whose first rule survives', async () => {
    const { result } = await fetchPath('/robots.txt', 'robots');
    expect({ status: result.status, truncated: result.truncated, chars: result.robotsTxt?.length }).toEqual({ status: 200, truncated: true, chars: LIMITS.robotsTxtChars });
    expect(result.robotsTxt).toMatch(/^# [^\n]*\nUser-agent: \*\nDisallow: \/private\/\n/);
  });

  it('answers flaky statuses until they recover: 429 and 503 once, 500 three times', async () => {
    web.hostile.state.reset();
    const statuses = async (path: string, n: number): Promise<(number | null)[]> => {
      const out: (number | null)[] = [];
      for (let i = 0; i < n; i++) out.push((await fetchPath(path)).result.status);
      return out;
    };
    expect(await statuses('/status/429.html', 2)).toEqual([429, 200]);
    expect(await statuses('/status/503.html', 2)).toEqual([503, 200]);
    expect(await statuses('/status/500-recovers.html', 4)).toEqual([500, 500, 500, 200]);
  });
});
