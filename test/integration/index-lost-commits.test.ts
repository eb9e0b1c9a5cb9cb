/**
 * A search index that lost acknowledged commits (its commit log cut short at a record's end, which
 * looks like a log that simply holds fewer commits) is refused at start, because the crawl database
 * records the index's commit count with each of its own commits; before, the queue server started and
 * the pages of the lost commits stayed unsearchable for good, and `petrel index check` called it ok.
 * A damaged index file at start is one line naming the file and the command that says more, not an
 * "internal error". An index directory moved away is a new index, accepted.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

/** The records of a commit log (LAYOUT.md: a 32-byte header, kind at 8, payload length at 16), in order. */
function logRecords(file: string): Array<{ kind: 'segment' | 'commit'; start: number; end: number }> {
  const bytes = readFileSync(file);
  const records: Array<{ kind: 'segment' | 'commit'; start: number; end: number }> = [];
  for (let at = 0; at + 32 <= bytes.length; ) {
    expect(bytes.toString('latin1', at, at + 8)).toBe('PETRELLG');
    const end = at + 32 + bytes.readUInt32LE(at + 16);
    records.push({ kind: bytes.readUInt32LE(at + 8) === 1 ? 'segment' : 'commit', start: at, end });
    at = end;
  }
  return records;
}

async function crawlDbStamp(data: string): Promise<number> {
  const stats = await runPetrel(['btree', 'stats', join(data, 'crawldb.btree'), '--json']);
  expect(stats.code, stats.stderr).toBe(0);
  return (JSON.parse(stats.stdout) as { stamp: number }).stamp;
}

describe('a search index that lost acknowledged commits', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 30 });
  });

  afterAll(async () => {
    await web?.close();
  });

  it('is refused at start and by index check, leaves the crawl database\'s record as it was, and a new index is accepted', async () => {
    const data = join(tempDir('index-lost'), 'data');
    const first = await runPetrel(['crawl', '--data', data, '--seed', `${web.origins[0]}/index.html`, '--delay-ms', '0', '--fetchers', '1', '--no-progress']);
    expect(first.code, first.stderr).toBe(0);
    const recorded = await crawlDbStamp(data);
    const log = join(data, 'index', 'log-000001.plg');
    const commits = logRecords(log).filter((r) => r.kind === 'commit');
    // Every commit of the crawl is in the first log (far below its 64 MiB bound), and the crawl database
    // recorded each one.
    expect(commits.length).toBeGreaterThanOrEqual(3);
    expect(recorded).toBe(commits.length);
    const clean = await runPetrel(['index', 'check', '--data', data, '--json']);
    expect(clean.code, clean.stdout).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ ok: true, commits: recorded, recordedCommits: recorded });

    // Cut the log right after its first COMMIT record: a whole log of one commit, to the index alone.
    truncateSync(log, commits[0]!.end);
    const check = await runPetrel(['index', 'check', '--data', data, '--json']);
    expect(check.code).toBe(1);
    expect(JSON.parse(check.stdout)).toMatchObject({ ok: false, commits: 1, recordedCommits: recorded, faults: [{ code: 'COMMITS_MISSING' }] });

    const refused = await runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--no-progress'], 60_000);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`petrel queue-server: the search index in ${join(data, 'index')} holds 1 commits, but the crawl database recorded ${recorded}`);
    expect(refused.stderr).toContain(`the index lost ${recorded - 1} acknowledged commits`);
    expect(refused.stderr).not.toContain('internal error');
    // The refused start closed its stores without recording the damaged index's count.
    expect(await crawlDbStamp(data)).toBe(recorded);

    // Moved away, as the message says: a new, empty index, its count recorded from zero.
    renameSync(join(data, 'index'), join(data, 'index.lost'));
    const again = await runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--no-progress'], 60_000);
    expect(again.code, again.stderr).toBe(0);
    expect(existsSync(join(data, 'index'))).toBe(true);
    const after = await runPetrel(['index', 'check', '--data', data, '--json']);
    expect(after.code, after.stdout).toBe(0);
    const report = JSON.parse(after.stdout) as { commits: number; recordedCommits: number };
    expect(report.recordedCommits).toBe(report.commits);
  }, 180_000);

  it('names the damaged index file and the command that lists what is wrong, not an internal error', async () => {
    const data = join(tempDir('index-damaged'), 'data');
    const first = await runPetrel(['crawl', '--data', data, '--seed', `${web.origins[0]}/index.html`, '--delay-ms', '0', '--fetchers', '1', '--no-progress']);
    expect(first.code, first.stderr).toBe(0);
    const log = join(data, 'index', 'log-000001.plg');
    const segment = logRecords(log).find((r) => r.kind === 'segment')!;
    // A byte of the first segment's footer (its last bytes), which every open verifies.
    const fd = openSync(log, 'r+');
    writeSync(fd, Buffer.from([0x5a ^ readFileSync(log)[segment.end - 20]!]), 0, 1, segment.end - 20);
    closeSync(fd);
    const second = await runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--no-progress'], 60_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/petrel queue-server: .*log-000001\.plg@32: .*\(the search index is damaged: petrel index check --data DIR lists what is wrong\)/);
    expect(second.stderr).not.toContain('internal error');
  }, 180_000);
});
