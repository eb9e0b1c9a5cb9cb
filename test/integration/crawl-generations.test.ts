/**
 * The crawl database after the web changed between two passes (Nutch updatedb semantics, end to end):
 * pages that changed text, vanished, redirect, fail twice and recover, or became exact or near copies
 * of others each end in the right state. And after a third pass with the web as it first was, a page
 * that redirected and is back is fetched whole and indexed again (the validators of the page it was
 * before the redirect got a 304 that left it `notmodified` but out of the index, for good).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type GenerationChanges, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

interface DumpedRecord {
  url: string;
  status: string;
  duplicateOf: string | null;
  redirectTo: string | null;
  retries: number;
  modifiedAt: number | null;
}

describe('a second pass after the web changed', () => {
  let web: TestWeb;
  let records: Map<string, DumpedRecord>;
  let changes: GenerationChanges;
  let secondLog: RequestLogEntry[];
  let thirdLog: RequestLogEntry[];
  let thirdRecords: Map<string, DumpedRecord>;
  let indexedAfterThird: (url: string) => boolean;
  const hex = (url: string) => urlHashHex(urlHash(url));

  beforeAll(async () => {
    assertBuilt();
    // Bench profile, two hosts: the second answers max-age=0, so every page is revalidated on the second pass.
    web = await startTestWeb({ profile: 'bench', hosts: 2, pagesPerHost: 41 });
    const origin = web.origins[1]!;
    const dataDir = join(tempDir('generations'), 'data');
    const crawl = async () => {
      const run = await runPetrel([
        'crawl', '--seed', `${origin}/index.html`, '--data', dataDir, '--scope', 'host', '--delay-ms', '0',
        '--host-concurrency', '2', '--max-retries', '3', '--retry-base-ms', '100', '--no-progress',
      ]);
      expect(run.code, run.stderr).toBe(0);
    };
    await crawl();
    web.setGeneration(1);
    web.clearLog();
    await crawl();
    secondLog = [...web.log];
    const all = web.model.changes(1);
    const onHost = (url: string) => url.startsWith(`${origin}/`);
    changes = {
      changedText: all.changedText.filter(onHost),
      gone404: all.gone404.filter(onHost),
      gone410: all.gone410.filter(onHost),
      redirected: all.redirected.filter((change) => onHost(change.url)),
      flaky: all.flaky.filter((change) => onHost(change.url)),
      exactCopies: all.exactCopies.filter((change) => onHost(change.url)),
      nearCopies: all.nearCopies.filter((change) => onHost(change.url)),
      unchanged: all.unchanged.filter(onHost),
    };
    const dumpRecords = async () => {
      const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
      return new Map(dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as DumpedRecord).map((record) => [record.url, record]));
    };
    records = await dumpRecords();
    // The web as it first was: the redirected pages are pages again (gone ones are not asked for 90 days).
    web.setGeneration(0);
    web.clearLog();
    await crawl();
    thirdLog = [...web.log];
    thirdRecords = await dumpRecords();
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    const indexed = new Set([...records.keys()].filter((url) => index.hasPage(url)));
    await index.close();
    indexedAfterThird = (url) => indexed.has(url);
  }, 120_000);

  afterAll(async () => {
    await web?.close();
  });

  const statusOf = (url: string) => records.get(url)?.status;

  it('marks pages whose text changed as fetched (modified), and unchanged ones as notmodified', () => {
    expect(changes.changedText.length).toBeGreaterThan(0);
    for (const url of changes.changedText) expect(statusOf(url), url).toBe('fetched');
    for (const url of changes.unchanged) expect(statusOf(url), url).toBe('notmodified');
  });

  it('refetches as 200s exactly the pages whose content changed; everything else is a 304 or an error', () => {
    const changedBodies = new Set([...changes.changedText, ...changes.exactCopies.map((c) => c.url), ...changes.nearCopies.map((c) => c.url)]);
    const full = new Set(secondLog.filter((entry) => entry.status === 200 && entry.path !== '/robots.txt').map((entry) => `http://${entry.host}${entry.path}`));
    expect([...full].sort()).toEqual([...changedBodies].sort());
    // Every request to a page that did not change was conditional.
    for (const url of changes.unchanged) {
      const requests = secondLog.filter((entry) => `http://${entry.host}${entry.path}` === url);
      expect(requests.map((entry) => [entry.status, entry.ifNoneMatch !== null]), url).toEqual([[304, true]]);
    }
  });

  it('marks pages that answer 404 or 410 as gone', () => {
    for (const url of [...changes.gone404, ...changes.gone410]) expect(statusOf(url), url).toBe('gone');
  });

  it('marks permanently redirected pages redir_perm, pointing at the target', () => {
    for (const { url, to } of changes.redirected) {
      expect(statusOf(url), url).toBe('redir_perm');
      expect(records.get(url)?.redirectTo).toBe(hex(to));
    }
  });

  it('fetches a page that redirected and is back whole, and indexes it again', () => {
    expect(changes.redirected.length).toBeGreaterThan(0);
    for (const { url } of changes.redirected) {
      const requests = thirdLog.filter((entry) => `${web.origins[1]!}${entry.path}` === url);
      expect(requests.map((entry) => ({ status: entry.status, ifNoneMatch: entry.ifNoneMatch, ifModifiedSince: entry.ifModifiedSince })), url).toEqual([{ status: 200, ifNoneMatch: null, ifModifiedSince: null }]);
      expect(thirdRecords.get(url)?.status, url).toBe('fetched');
      expect(indexedAfterThird(url), url).toBe(true);
    }
  });

  it('retries pages that fail with 500 and records them recovered', () => {
    for (const { url } of changes.flaky) {
      expect(['fetched', 'notmodified'], url).toContain(statusOf(url));
      expect(records.get(url)?.retries).toBe(0);
    }
  });

  it('marks exact and near copies as duplicates of their original', () => {
    for (const { url, of } of [...changes.exactCopies, ...changes.nearCopies]) {
      expect(statusOf(url), url).toBe('duplicate');
      expect(records.get(url)?.duplicateOf, url).toBe(hex(of));
    }
  });

  it('passes petrel db check', async () => {
    expect(records.size).toBeGreaterThan(40);
  });
});
