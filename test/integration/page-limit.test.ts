/**
 * `--max-pages` stops a pass with URLs still queued, and the limit is saved with the crawl: the end of
 * the pass says so (in its lines and its summary), and `--max-pages none` lets the next pass fetch
 * them. Without the line, a pass after a limited one spent its limit on revalidations of the same
 * pages and never said that the rest were waiting. And the next pass spends its limit on pages never
 * fetched, not on 304s of the pages the pass before fetched (a host's URLs starved pass after pass).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

describe('a crawl stopped by --max-pages', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    // Two hosts, the second's pages answered with max-age=0: never fresh, so a pass may revalidate them.
    web = await startTestWeb({ profile: 'bench', hosts: 2, pagesPerHost: 20 });
  });

  afterAll(async () => {
    await web?.close();
  });

  it('says the limit stopped it with URLs still queued, pass after pass, until --max-pages none fetches them', async () => {
    const dir = tempDir('page-limit');
    const data = join(dir, 'data');
    const seed = `${web.origins[1]}/index.html`;
    const crawl = async (extra: string[], label: string) => {
      const summaryFile = join(dir, `${label}.json`);
      const run = await runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--no-progress', '--summary-json', summaryFile, ...extra]);
      expect(run.code, run.stderr).toBe(0);
      return { stderr: run.stderr, summary: JSON.parse(readFileSync(summaryFile, 'utf8')) as { pageLimit: { maxPages: number; queuedLeft: number } | null; urlsByStatus: Record<string, number> } };
    };
    const first = await crawl(['--seed', seed, '--scope', 'host', '--max-pages', '5'], 'first');
    expect(first.summary.pageLimit?.maxPages).toBe(5);
    expect(first.summary.pageLimit?.queuedLeft).toBeGreaterThan(0);
    expect(first.stderr).toMatch(new RegExp(`page limit: +--max-pages 5 reached with ${first.summary.pageLimit!.queuedLeft} URLs still queued; the limit is saved with the crawl`));
    expect(first.stderr).toContain(`crawl --data ${data} --max-pages none`);

    // The saved limit again: said again. It goes to pages never fetched; the first pass's wait for their time.
    const firstPages = new Set(web.log.filter((entry) => entry.path !== '/robots.txt').map((entry) => entry.path));
    web.clearLog();
    const second = await crawl([], 'second');
    expect(second.summary.pageLimit?.maxPages).toBe(5);
    expect(second.stderr).toContain('page limit:');
    const secondPages = web.log.filter((entry) => entry.path !== '/robots.txt' && !entry.path.startsWith('/sitemap'));
    expect(secondPages.map((entry) => entry.path).filter((path) => firstPages.has(path))).toEqual([]);
    expect(secondPages.length).toBe(5);
    expect(second.summary.urlsByStatus.unfetched).toBeLessThan(first.summary.urlsByStatus.unfetched!);

    const all = await crawl(['--max-pages', 'none'], 'all');
    expect(all.summary.pageLimit).toBeNull();
    expect(all.stderr).not.toContain('page limit:');
    expect(first.summary.urlsByStatus.unfetched).toBeGreaterThan(0);
    expect(all.summary.urlsByStatus.unfetched ?? 0).toBe(0);
  }, 120_000);
});
