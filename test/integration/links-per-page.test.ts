/**
 * `--max-links-per-page`: a crawl of the test web's main host that follows only the first three links
 * of each page requests exactly the pages the model reaches that way, and its summary counts the links
 * it left out (each page's distinct followable links past the third) and the pages that had them.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { followedLinks } from '../../scripts/test-web/reachable.js';
import { assertBuilt, runPetrel, tempDir, type Finished } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';

const MAX_LINKS = 3;
const MAX_DEPTH = 4;

describe('petrel crawl --max-links-per-page 3', () => {
  let web: TestWeb;
  let dir: string;
  let run: Finished;
  let summary: { pagesFetched: number; linksCut: number; pagesLinksCut: number; pagesTruncated: number };
  let expected: Map<string, number>;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 30, hosts: 2 });
    dir = tempDir('links-per-page');
    const main = web.hostByRole.main;
    const seed = `${main}/index.html`;
    const summaryFile = join(dir, 'summary.json');
    run = await runPetrel([
      'crawl', '--seed', seed, '--data', join(dir, 'data'), '--fetchers', '1', '--scope', 'host', '--max-depth', String(MAX_DEPTH),
      '--delay-ms', '0', '--max-retries', '0', '--max-links-per-page', String(MAX_LINKS), '--summary-json', summaryFile, '--no-progress',
    ], 120_000);
    summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
    expected = web.model.reachable({ seeds: [seed], inScope: (url) => new URL(url).origin === main, maxDepth: MAX_DEPTH, maxLinksPerPage: MAX_LINKS });
  }, 150_000);

  afterAll(async () => {
    await web?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('requests the pages the first three links of each page lead to, each once, and nothing else', () => {
    expect(run.code, run.stderr).toBe(0);
    const requested = countBy(pageRequests([...web.log]), urlOf);
    expect([...requested.keys()].sort()).toEqual([...expected.keys()].sort());
    expect([...requested.values()].every((n) => n === 1)).toBe(true);
    // The bound leaves pages out: the same crawl without it reaches more.
    const unbounded = web.model.reachable({ seeds: [`${web.hostByRole.main}/index.html`], inScope: (url) => new URL(url).origin === web.hostByRole.main, maxDepth: MAX_DEPTH });
    expect(unbounded.size).toBeGreaterThan(expected.size);
  });

  it('counts the links it did not follow and the pages that had them, and says so', () => {
    let linksCut = 0;
    let pagesLinksCut = 0;
    for (const url of expected.keys()) {
      const past = followedLinks(web.model.page(url)!).length - MAX_LINKS;
      if (past > 0) {
        linksCut += past;
        pagesLinksCut++;
      }
    }
    expect(pagesLinksCut).toBeGreaterThan(0);
    expect({ linksCut: summary.linksCut, pagesLinksCut: summary.pagesLinksCut }).toEqual({ linksCut, pagesLinksCut });
    expect(run.stderr).toContain(`links cut:       ${linksCut} links on ${pagesLinksCut} pages past --max-links-per-page`);
  });
});
