/**
 * Sitemaps end to end (sitemaps.org protocol 0.9), over real HTTP on loopback: `petrel crawl` of the
 * test web's sitemap host reads the two sitemaps its robots.txt names (a sitemap index of gzip
 * sitemaps, and one listing URLs it may not list) and /sitemap.xml, fetches the pages reachable only
 * through them, never the entries of another host or outside a sitemap's directory, counts sitemaps
 * apart from pages, and on a second pass fetches the page whose lastmod is newer than its last fetch
 * while every other page is still fresh, asking each unchanged sitemap with its validators; a host's
 * /sitemap.xml that answered 404 is not asked again in the next pass; and a queue server in continuous
 * mode queues at once a known page whose lastmod says it changed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { SITEMAP_FILES, SITEMAP_IGNORED_PAGES, SITEMAP_ONLY_PAGES } from '../../scripts/test-web/sitemap-host.js';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

interface Summary {
  pagesFetched: number;
  skippedFresh: number;
  requests: number;
  robotsRequests: number;
  sitemapRequests: number;
  sitemapsRead: number;
  sitemapUrls: number;
  sitemapUrlsRefused: number;
  sitemapChanged: number;
  sitemapsSkipped: number;
}

const CHANGED = '/sitemaps/page-2-1.html';

describe('sitemaps', () => {
  let web: TestWeb;
  let dataDir: string;
  let first: Summary;
  let second: Summary;
  let firstLog: RequestLogEntry[];
  let secondLog: RequestLogEntry[];

  const crawl = async (label: string, extra: string[] = []): Promise<Summary> => {
    const summaryFile = join(dataDir, `${label}.json`);
    const run = await runPetrel([
      'crawl', '--seed', `${web.sitemaps.origin}/index.html`, '--data', join(dataDir, 'data'),
      // Scope any: only the sitemap rule (its own host and directory) keeps the foreign entries out.
      '--scope', 'any', '--delay-ms', '0', '--fetchers', '1', '--summary-json', summaryFile, '--no-progress', ...extra,
    ]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
  };
  const ofSitemapHost = (log: readonly RequestLogEntry[]) => log.filter((entry) => entry.host === web.sitemaps.authority);

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ hosts: 1, pagesPerHost: 5 });
    dataDir = tempDir('sitemaps');
    first = await crawl('first');
    firstLog = [...web.log];
    web.clearLog();
    // The page changes after its first fetch; its sitemap says so with a lastmod of now.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    web.sitemaps.change(CHANGED);
    second = await crawl('second');
    secondLog = [...web.log];
  }, 120_000);

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('reads every sitemap once, robots.txt first, and the gzip sitemaps an index lists', () => {
    const paths = ofSitemapHost(firstLog).map((entry) => entry.path);
    expect(paths[0]).toBe('/robots.txt');
    for (const file of SITEMAP_FILES) expect(paths.filter((path) => path === file), file).toHaveLength(1);
    // Sitemaps are read before the pages they list.
    const lastSitemap = Math.max(...SITEMAP_FILES.map((file) => paths.indexOf(file)));
    for (const page of SITEMAP_ONLY_PAGES) expect(paths.indexOf(page), page).toBeGreaterThan(lastSitemap);
  });

  it('fetches the pages reachable only through sitemaps, and nothing a sitemap may not list', () => {
    const paths = new Set(ofSitemapHost(firstLog).map((entry) => entry.path));
    for (const page of [...SITEMAP_ONLY_PAGES, '/index.html', '/linked.html']) expect(paths.has(page), page).toBe(true);
    for (const page of SITEMAP_IGNORED_PAGES) expect(paths.has(page), page).toBe(false);
    // The other host: neither its sitemap (a robots.txt Sitemap: line) nor the page the blog sitemap lists.
    expect(firstLog.filter((entry) => entry.host !== web.sitemaps.authority)).toEqual([]);
  });

  it('counts sitemaps as discovery, not as pages', () => {
    const pages = SITEMAP_ONLY_PAGES.length + 2;
    expect(first).toMatchObject({
      pagesFetched: pages,
      robotsRequests: 1,
      sitemapRequests: SITEMAP_FILES.length,
      sitemapsRead: SITEMAP_FILES.length,
      sitemapUrls: SITEMAP_ONLY_PAGES.length,
      // /shop/item.html outside the blog sitemap's directory, and the main host's page.
      sitemapUrlsRefused: 2,
      requests: 1 + SITEMAP_FILES.length + pages,
    });
  });

  it('does not count sitemaps against --max-pages', async () => {
    web.clearLog();
    const dir = join(dataDir, 'limited');
    const summaryFile = join(dataDir, 'limited.json');
    const run = await runPetrel([
      'crawl', '--seed', `${web.sitemaps.origin}/index.html`, '--data', dir, '--scope', 'any', '--delay-ms', '0',
      '--fetchers', '1', '--max-pages', '3', '--summary-json', summaryFile, '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
    expect(summary.pagesFetched).toBe(3);
    expect(summary.sitemapRequests).toBeGreaterThanOrEqual(1);
    const pages = ofSitemapHost(web.log).filter((entry) => entry.path !== '/robots.txt' && !SITEMAP_FILES.includes(entry.path));
    expect(pages).toHaveLength(3);
  });

  it('on the next pass fetches a page whose lastmod is newer than its last fetch, though its copy is fresh', () => {
    const pages = ofSitemapHost(secondLog).filter((entry) => entry.path !== '/robots.txt' && !SITEMAP_FILES.includes(entry.path));
    expect(pages.map((entry) => entry.path)).toEqual([CHANGED]);
    expect(pages[0]!.status).toBe(200);
    expect(second).toMatchObject({ pagesFetched: 1, sitemapChanged: 1, skippedFresh: SITEMAP_ONLY_PAGES.length + 1 });
  });

  it('asks each unchanged sitemap of the last pass with its validators (a 304), and a sitemap index in full', () => {
    const byPath = new Map(ofSitemapHost(secondLog).filter((entry) => SITEMAP_FILES.includes(entry.path)).map((entry) => [entry.path, entry]));
    expect([...byPath.keys()].sort()).toEqual([...SITEMAP_FILES].sort());
    for (const file of ['/sitemaps/part-1.xml.gz', '/blog/sitemap.xml', '/sitemap.xml']) expect(byPath.get(file), file).toMatchObject({ status: 304 });
    for (const file of ['/sitemaps/part-1.xml.gz', '/blog/sitemap.xml', '/sitemap.xml']) expect(byPath.get(file)!.ifNoneMatch, file).not.toBeNull();
    // The index is read again in full (its sitemaps are taken up from it); the sitemap that dates the
    // changed page was asked with its old ETag and answered in full.
    expect(byPath.get('/sitemap-index.xml')).toMatchObject({ status: 200, ifNoneMatch: null });
    expect(byPath.get('/sitemaps/part-2.xml.gz')!.ifNoneMatch).not.toBeNull();
    expect(byPath.get('/sitemaps/part-2.xml.gz')).toMatchObject({ status: 200 });
  });

  it('does not ask again, in the next pass, for the /sitemap.xml that answered 404', async () => {
    // A host with no sitemap and nothing that fails: robots.txt 404, five pages.
    const main = web.hostByRole.robots404!;
    const mainHost = new URL(main).host;
    const dir = join(dataDir, 'main');
    const pass = async (label: string): Promise<{ summary: Summary; log: RequestLogEntry[] }> => {
      web.clearLog();
      const summaryFile = join(dataDir, `main-${label}.json`);
      const run = await runPetrel(['crawl', '--seed', `${main}/index.html`, '--data', dir, '--scope', 'host', '--delay-ms', '0', '--fetchers', '1', '--summary-json', summaryFile, '--no-progress']);
      expect(run.code, run.stderr).toBe(0);
      return { summary: JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary, log: web.log.filter((entry) => entry.host === mainHost) };
    };
    const firstPass = await pass('first');
    expect(firstPass.log.filter((entry) => entry.path === '/sitemap.xml').map((entry) => entry.status)).toEqual([404]);
    expect(firstPass.summary.sitemapRequests).toBe(1);
    const secondPass = await pass('second');
    expect(secondPass.log.filter((entry) => entry.path === '/sitemap.xml')).toEqual([]);
    expect(secondPass.summary).toMatchObject({ sitemapRequests: 0, sitemapsSkipped: 1 });
  });

  it('in continuous mode, queues at once a known page whose lastmod is newer than its last fetch', async () => {
    const changed = '/sitemaps/page-1-2.html';
    web.clearLog();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    web.sitemaps.change(changed);
    // The crawl database of the two passes above: every page fetched and fresh (max-age=3600), its next
    // fetch a month away. A new seed on the host gives its queue work, so its sitemaps are read.
    const seed = `${web.sitemaps.origin}/index.html?from=continuous`;
    const server = startPetrel([
      'queue-server', '--data', join(dataDir, 'data'), '--port', '0', '--seed', `${web.sitemaps.origin}/index.html`, '--seed', seed, '--scope', 'any', '--delay-ms', '0',
    ]);
    const listening = await waitForEvent(server, 'listening');
    const fetcher = startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--concurrency', '2']);
    const pageRequests = () => ofSitemapHost(web.log).filter((entry) => entry.path !== '/robots.txt' && !SITEMAP_FILES.includes(entry.path));
    await expect.poll(() => pageRequests().some((entry) => entry.path === changed), { timeout: 60_000, interval: 100 }).toBe(true);
    // Whatever else was due would have come with it: give the cut a moment more, then stop.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // The fetcher first, as petrel crawl and Ctrl-C stop them: it delivers what it holds, which a queue
    // server stopped at the same moment may no longer take (a fetcher without --once then waits for it).
    fetcher.kill('SIGTERM');
    await fetcher.output;
    server.kill('SIGTERM');
    await server.output;
    expect(pageRequests().map((entry) => [entry.path, entry.status]).sort()).toEqual([['/index.html?from=continuous', 200], [changed, 200]].sort());
  }, 90_000);

  it('reads no sitemap with --no-sitemaps', async () => {
    web.clearLog();
    const summaryFile = join(dataDir, 'off.json');
    const run = await runPetrel([
      'crawl', '--seed', `${web.sitemaps.origin}/index.html`, '--data', join(dataDir, 'off'), '--scope', 'any', '--delay-ms', '0',
      '--fetchers', '1', '--no-sitemaps', '--summary-json', summaryFile, '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(ofSitemapHost(web.log).map((entry) => entry.path).sort()).toEqual(['/index.html', '/linked.html', '/robots.txt']);
  });
});
