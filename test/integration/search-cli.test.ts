/**
 * `petrel search` and `petrel index check` as a user runs them (the built binary on a data directory
 * whose index/ was written by the engine): results and their JSON, the crawl database's OPIC score as
 * authority, a refused query, a clean and a damaged index, a directory without an index.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import { encodeCrawlDbRecord, newCrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { readManifest } from '../../queue-server/search/manifest.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { decodeFooter, FOOTER_BYTES } from '../../queue-server/search/segment-format.js';
import { buildIndexData } from '../../shared/index-data.js';
import { urlHash } from '../../shared/url-hash.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

let data = '';

beforeAll(async () => {
  assertBuilt();
  data = tempDir('search-cli');
  const index = SearchIndex.open(path.join(data, 'index'), { merges: 'off' });
  const pages: Array<[string, string, string]> = [
    ['http://a.test/one', 'Twin page', 'The crawler keeps a heron in the <b>garden</b>.'],
    ['http://a.test/two', 'Twin page', 'The crawler keeps a heron in the <b>garden</b>.'],
    ['http://b.test/three', 'Other', 'Nothing about birds here.'],
  ];
  for (const [url, title, text] of pages) {
    index.stage({ kind: 'page', url, fetchedAt: 1_764_000_000_000, data: buildIndexData({ title, headings: [], bodyText: text, language: 'en', anchors: [] }) });
  }
  index.commit();
  // Checkpointed, so that the damage test below has a segment file to damage.
  await index.close({ checkpoint: true });
  // The crawl database gives http://a.test/two a far higher OPIC score.
  const tree = BTree.open(path.join(data, 'crawldb.btree'), { pageSize: 16384 });
  tree.write((batch) => {
    batch.put(urlHash('http://a.test/one'), encodeCrawlDbRecord(newCrawlDbRecord('http://a.test/one', 0, 0.01, 0, DEFAULT_FETCH_SCHEDULE)));
    batch.put(urlHash('http://a.test/two'), encodeCrawlDbRecord(newCrawlDbRecord('http://a.test/two', 0, 5, 0, DEFAULT_FETCH_SCHEDULE)));
  });
  tree.close();
});

afterAll(() => {
  if (data !== '') fs.rmSync(data, { recursive: true, force: true });
});

describe('petrel search', () => {
  it('prints ranked results as JSON, the higher OPIC score first among equals, snippets escaped with marks', async () => {
    const run = await runPetrel(['search', '--data', data, '--json', 'heron', 'garden']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as { query: string; total: number; tookMs: number; results: Array<{ url: string; title: string; snippet: string }> };
    expect(out.query).toBe('heron garden');
    expect(out.total).toBe(2);
    expect(out.results.map((r) => r.url)).toEqual(['http://a.test/two', 'http://a.test/one']);
    expect(out.results[0]!.snippet).toBe('The crawler keeps a <mark>heron</mark> in the &lt;b&gt;<mark>garden</mark>&lt;/b&gt;.');
    expect(typeof out.tookMs).toBe('number');
  });

  it('prints results for people, with --limit and --offset', async () => {
    const run = await runPetrel(['search', '--data', data, '--limit', '1', '--offset', '1', 'crawler']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^results 2-2 of 2 for "crawler"/);
    expect(run.stdout).toContain('http://a.test/one');
    expect(run.stdout).toContain('The [crawler] keeps a heron');
  });

  it('refuses a bad query with status 2 and says why', async () => {
    const run = await runPetrel(['search', '--data', data, '-only']);
    expect(run.code).not.toBe(0);
    const long = await runPetrel(['search', '--data', data, 'x'.repeat(600)]);
    expect(long.code).toBe(2);
    expect(long.stderr).toContain('at most 512');
  });

  it('says so when the directory has no index', async () => {
    const empty = tempDir('search-cli-empty');
    const run = await runPetrel(['search', '--data', empty, 'word']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no search index');
    fs.rmSync(empty, { recursive: true, force: true });
  });
});

describe('petrel index check', () => {
  it('exits 0 on a clean index and 1 with one line per fault on a damaged one', async () => {
    const ok = await runPetrel(['index', 'check', '--data', data]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/1 segments, 3 entries, 3 live pages, \d+ terms, \d+ postings\nok\n$/);

    const damaged = tempDir('search-cli-damaged');
    fs.cpSync(data, damaged, { recursive: true });
    const file = path.join(damaged, 'index', readManifest(path.join(damaged, 'index'))!.segments[0]!.file);
    const bytes = fs.readFileSync(file);
    const postings = decodeFooter(bytes.subarray(bytes.length - FOOTER_BYTES), bytes.length, file).sections.postings;
    bytes[postings.offset + 5]! ^= 0x20;
    fs.writeFileSync(file, bytes);
    const bad = await runPetrel(['index', 'check', '--data', damaged]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('FAULT SECTION_CHECKSUM seg-000001.psg: section postings checksum mismatch');
    const json = await runPetrel(['index', 'check', '--data', damaged, '--json']);
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as { ok: boolean }).ok).toBe(false);
    fs.rmSync(damaged, { recursive: true, force: true });
  });
});
