/**
 * Search over a real crawl of the test web (petrel crawl: a queue server and fetchers as processes),
 * held to ground truth: for a fixed list of queries the URLs the index matches are exactly those a
 * brute-force scan finds (test/support/search-model.ts) over index data built from the test web's
 * model of each page's text (scripts/test-web site-model `text`: title, headings, visible text,
 * anchors), never from the HTML the crawler parsed. Which URLs are pages, duplicates or gone comes from
 * the crawl database (petrel db dump): the index must follow its verdicts. Then the web changes
 * (generation 1) and a second pass must leave the index matching generation 1 the same way.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { ANCHOR_TEXT } from '../../scripts/test-web/main-extras.js';
import { buildIndexData } from '../../shared/index-data.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { parseQuery } from '../../queue-server/search/query-parser.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';
import { SearchModel } from '../support/search-model.js';

interface DumpedRecord {
  url: string;
  status: string;
  duplicateOf: string | null;
}

/** Single words, AND of two and three, phrases, exclusions, site:, Chinese, Japanese, anchor-only words. */
const QUERIES = [
  'kelp',
  'albatross',
  'shearwater',
  'kelp captain',
  'storm petrel harbour',
  'gannet tern plover',
  '"front kelp"',
  '"storm petrel"',
  '"petrel test web"',
  'kelp -captain',
  'ocean -"storm petrel"',
  'site:127.0.0.3 kelp',
  'site:127.0.0.2 -kelp',
  '爬虫',
  '搜索引擎',
  '検索エンジン',
  'ウェブクローラー',
  'lighthouse almanac',
  'zygomorphic orchid',
  'chain',
];

describe('search over a crawl of the test web', () => {
  let web: TestWeb;
  let dataDir: string;

  const crawl = async () => {
    const run = await runPetrel([
      'crawl', ...web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`]), '--data', dataDir, '--scope', 'host', '--max-depth', '4',
      '--delay-ms', '0', '--host-concurrency', '2', '--robots-retry-ms', '200', '--robots-attempts', '1', '--max-retries', '1', '--retry-base-ms', '100', '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
  };

  /** The crawl database's verdict per URL. */
  const records = async (): Promise<Map<string, DumpedRecord>> => {
    const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
    expect(dump.code, dump.stderr).toBe(0);
    return new Map(dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as DumpedRecord).map((record) => [record.url, record]));
  };

  /** URLs whose last page record says truncated (large.html): the crawler indexed only a prefix of them. */
  const truncatedUrls = (): Set<string> => {
    const latest = new Map<string, boolean>();
    for (const line of readFileSync(join(dataDir, 'pages.jsonl'), 'utf8').trim().split('\n')) {
      const record = JSON.parse(line) as { url: string; truncated: boolean; outcome: string };
      if (record.outcome === 'fetched') latest.set(record.url, record.truncated);
    }
    return new Set([...latest].filter(([, truncated]) => truncated).map(([url]) => url));
  };

  /** The brute-force model of what the index should hold, from the test web's model of each page's text. */
  const groundTruth = (dump: Map<string, DumpedRecord>, skip: ReadonlySet<string>, textOf = (url: string) => web.model.text(url)): SearchModel => {
    const model = new SearchModel();
    const byHash = new Map([...dump.values()].map((record) => [urlHashHex(urlHash(record.url)), record.url]));
    for (const record of dump.values()) {
      if (skip.has(record.url)) continue;
      const text = textOf(record.url);
      if (text === undefined || (record.status !== 'fetched' && record.status !== 'duplicate' && record.status !== 'notmodified')) continue;
      const anchors = text.metaNofollow ? [] : text.anchors.filter((anchor) => !anchor.nofollow).map(({ url, text: anchorText }) => ({ url, text: anchorText }));
      if (record.status === 'duplicate') {
        const originalUrl = byHash.get(record.duplicateOf ?? '');
        if (originalUrl === undefined) continue;
        model.stage({ kind: 'duplicate', url: record.url, originalUrl, anchors: buildIndexData({ title: null, headings: [], bodyText: '', language: 'en', anchors }).anchors });
      } else if (text.metaNoindex) {
        model.stage({ kind: 'noindex', url: record.url, anchors: buildIndexData({ title: null, headings: [], bodyText: '', language: 'en', anchors }).anchors });
      } else {
        model.stage({ kind: 'page', url: record.url, fetchedAt: 0, data: buildIndexData({ title: text.title, headings: text.headings, bodyText: text.body, language: 'en', anchors }) });
      }
    }
    model.commit();
    return model;
  };

  /** Every URL the index returns for the query, all pages of results. */
  const searchAll = (index: SearchIndex, query: string): string[] => {
    const urls: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const { total, results } = index.search(query, { limit: 100, offset, snippets: false });
      urls.push(...results.map((result) => result.url));
      if (offset + 100 >= total) return urls;
    }
  };

  const compare = (index: SearchIndex, model: SearchModel, skip: ReadonlySet<string>) => {
    let found = 0;
    for (const query of QUERIES) {
      const got = searchAll(index, query).filter((url) => !skip.has(url));
      expect(new Set(got).size, `${query}: no URL twice`).toBe(got.length);
      const want = model.matching(parseQuery(query));
      if (process.env.SEARCH_DEBUG) console.log(query, 'extra', got.filter((u) => !want.includes(u)), 'missing', want.filter((u) => !got.includes(u)));
      expect(got.sort(), query).toEqual(want);
      found += got.length;
    }
    return found;
  };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 30, hosts: 3 });
    dataDir = join(tempDir('search-crawl'), 'data');
    await crawl();
  }, 180_000);

  afterAll(async () => {
    await web?.close();
  });

  it('matches exactly the pages a brute-force scan of the model finds, for every query', async () => {
    const skip = truncatedUrls();
    expect(skip.size).toBe(1); // large.html, cut at the body limit
    const model = groundTruth(await records(), skip);
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      expect(model.livePages().length).toBeGreaterThan(100);
      expect(compare(index, model, skip)).toBeGreaterThan(500);
      // Each CJK query finds its page (segmented into words by the fetcher and by the query alike).
      const main = web.hostByRole.main;
      expect(searchAll(index, '爬虫')).toEqual([`${main}/lang/zh.html`]);
      expect(searchAll(index, '検索エンジン')).toEqual([`${main}/lang/ja.html`]);
    } finally {
      await index.close();
    }
  });

  it('ranks a page with the word in its title above pages that have it only in their text', async () => {
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      const main = web.hostByRole.main;
      const { results } = index.search('chain', { limit: 10 });
      const urls = results.map((result) => result.url);
      // "End of the redirect chain" is the title of end.html; the index page has the word in a link's text.
      expect(urls[0]).toBe(`${main}/redirect/end.html`);
      expect(urls).toContain(`${main}/index.html`);
    } finally {
      await index.close();
    }
  });

  it('finds a page by words only the anchor text of links to it uses', async () => {
    const main = web.hostByRole.main;
    const target = `${main}/anchor/target.html`;
    expect(web.model.text(target)!.body.toLowerCase()).not.toContain('lighthouse');
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      const urls = index.search(ANCHOR_TEXT.toLowerCase(), { limit: 10 }).results.map((result) => result.url);
      expect(urls).toContain(target);
    } finally {
      await index.close();
    }
  });

  it('after the web changes and a second pass: changed pages by their new words only, gone pages not at all, a duplicate never beside its original', async () => {
    web.setGeneration(1);
    web.clearLog();
    await crawl();
    // Pages still fresh by their Cache-Control (the main host's max-age=3600) are not asked again: the
    // index keeps what was fetched, so their ground truth is their generation-0 text.
    const requested = new Set(web.log.map((entry) => `http://${entry.host}${entry.path}`));
    const textAt = (generation: number, url: string) => {
      web.setGeneration(generation);
      const text = web.model.text(url);
      web.setGeneration(1);
      return text;
    };
    const changes = web.model.changes(1);
    const dump = await records();
    const skip = truncatedUrls();
    const model = groundTruth(dump, skip, (url) => textAt(requested.has(url) ? 1 : 0, url));
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      compare(index, model, skip);
      // Gone (404, 410) and redirected pages have left the index.
      for (const url of [...changes.gone404, ...changes.gone410, ...changes.redirected.map((change) => change.url)]) {
        if (requested.has(url)) expect(index.hasPage(url), url).toBe(false);
      }
      // A changed page is found by a phrase of its new text and not by one of its old text.
      const changed = changes.changedText.find((url) => requested.has(url) && dump.get(url)?.status === 'fetched')!;
      expect(changed).toBeDefined();
      const now = web.model.text(changed)!.body;
      web.setGeneration(0);
      const before = web.model.text(changed)!.body;
      web.setGeneration(1);
      const phraseOnlyIn = (text: string, other: string): string => {
        const words = text.split('\n').slice(3).join(' ').toLowerCase().replace(/[^a-z ]/g, ' ').split(/\s+/).filter(Boolean);
        for (let i = 0; i + 4 <= words.length; i++) {
          const phrase = words.slice(i, i + 4).join(' ');
          if (!other.toLowerCase().replace(/[^a-z ]/g, ' ').replace(/\s+/g, ' ').includes(phrase)) return `"${phrase}"`;
        }
        throw new Error('no phrase of one text is missing from the other');
      };
      expect(searchAll(index, phraseOnlyIn(now, before))).toContain(changed);
      expect(searchAll(index, phraseOnlyIn(before, now))).not.toContain(changed);
      // Duplicates (exact and near copies) are never results; their originals are.
      const duplicates = [...dump.values()].filter((record) => record.status === 'duplicate');
      expect(duplicates.length).toBeGreaterThan(0);
      for (const record of duplicates) expect(index.hasPage(record.url), record.url).toBe(false);
      for (const query of QUERIES) {
        const urls = new Set(searchAll(index, query));
        for (const record of duplicates) expect(urls.has(record.url), `${query}: ${record.url}`).toBe(false);
      }
    } finally {
      await index.close();
    }
  }, 180_000);
});
