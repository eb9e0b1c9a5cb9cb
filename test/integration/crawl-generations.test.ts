/**
 * The crawl database after the web changed between two passes (Nutch updatedb semantics, end to end):
 * pages that changed text, vanished, redirect, fail twice and recover, or became exact or near copies
 * of others each end in the right state.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type GenerationChanges, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
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
    const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
    records = new Map(dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as DumpedRecord).map((record) => [record.url, record]));
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
