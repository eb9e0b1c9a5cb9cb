/**
 * The search index's commit log (queue-server/search/commit-log.ts) in-process: a commit is one log
 * append and makes its pages searchable at once, for the writer and for a read-only handle, with no
 * segment file or manifest written; a reopen replays it; an unacknowledged tail is cut and counted, not
 * reported as a fault; damage inside committed records is; a checkpoint bounds the log, removes the old
 * one and leaves a segment file the manifest names.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildIndexData } from '../../shared/index-data.js';
import { checkIndex } from '../../queue-server/search/check.js';
import { logFileName, scanLog } from '../../queue-server/search/commit-log.js';
import { SearchIndex, type IndexChange } from '../../queue-server/search/search-index.js';
import { tempDir } from '../support/search-model.js';

function page(i: number, words: string, anchorTo: number | null = null): IndexChange {
  return {
    kind: 'page',
    url: `http://log.example/p${i}`,
    fetchedAt: 1_700_000_000_000 + i,
    data: buildIndexData({ title: `Page ${i}`, headings: [], bodyText: `marker${i} ${words}`, language: 'en', anchors: anchorTo === null ? [] : [{ url: `http://log.example/p${anchorTo}`, text: `via${i}` }] }),
  };
}

function urls(index: SearchIndex, query: string): string[] {
  return index.search(query, { limit: 100, snippets: false }).results.map((r) => r.url).sort();
}

describe('search index commit log', () => {
  it('makes a commit searchable from the log alone, for the writer and a read-only handle, and replays it on reopen', async () => {
    const dir = tempDir();
    const writer = SearchIndex.open(dir, { merges: 'off' });
    writer.stage(page(1, 'alpha beta', 2));
    writer.stage(page(2, 'alpha gamma'));
    writer.commit();
    writer.stage(page(1, 'delta'));
    writer.stage({ kind: 'remove', url: 'http://log.example/p2' });
    writer.stage(page(3, 'alpha'));
    writer.commit();
    // Only the log: no segment file, no manifest.
    expect(fs.readdirSync(dir).sort()).toEqual([logFileName(1)]);
    expect(urls(writer, 'alpha')).toEqual(['http://log.example/p3']);
    expect(urls(writer, 'delta')).toEqual(['http://log.example/p1']);
    const reader = SearchIndex.open(dir, { readOnly: true });
    expect(urls(reader, 'alpha')).toEqual(['http://log.example/p3']);
    expect(urls(reader, 'beta')).toEqual([]);
    expect(urls(reader, 'gamma')).toEqual([]);
    expect(reader.stats().commits).toBe(2);
    await reader.close();
    const report = checkIndex(dir);
    expect(report.faults).toEqual([]);
    expect(report).toMatchObject({ segments: 0, logs: 1, logSegments: 2, logTailBytes: 0, livePages: 2 });
    // A writer that dies without closing (no checkpoint): the next writer replays the log.
    const again = SearchIndex.open(dir, { merges: 'off' });
    expect(urls(again, 'alpha')).toEqual(['http://log.example/p3']);
    expect(urls(again, 'via1')).toEqual([]);
    expect(again.stats()).toMatchObject({ commits: 2, livePages: 2 });
    await again.close();
    await writer.close();
  });

  it('cuts an unacknowledged tail at the next writable open, counting it in check without a fault', async () => {
    const dir = tempDir();
    const writer = SearchIndex.open(dir, { merges: 'off' });
    writer.stage(page(1, 'kept'));
    writer.commit();
    const log = path.join(dir, logFileName(1));
    const committed = fs.statSync(log).size;
    // A commit in flight when the process died: its segment record and half of its COMMIT record.
    writer.stage(page(2, 'lost'));
    writer.commit();
    const full = fs.statSync(log).size;
    fs.truncateSync(log, full - 10);
    const torn = checkIndex(dir);
    expect(torn.faults).toEqual([]);
    expect(torn.logTailBytes).toBe(full - 10 - committed);
    const reader = SearchIndex.open(dir, { readOnly: true });
    expect(urls(reader, 'kept')).toEqual(['http://log.example/p1']);
    expect(urls(reader, 'lost')).toEqual([]);
    await reader.close();
    const reopened = SearchIndex.open(dir, { merges: 'off' });
    expect(fs.statSync(log).size).toBe(committed);
    expect(reopened.stats().commits).toBe(1);
    reopened.stage(page(3, 'after'));
    reopened.commit();
    expect(urls(reopened, 'after kept')).toEqual([]);
    expect(urls(reopened, 'after')).toEqual(['http://log.example/p3']);
    expect(scanLog(log).groups.map((g) => g.commits)).toEqual([1, 2]);
    await reopened.close();
    expect(checkIndex(dir).faults).toEqual([]);
    await writer.close();
  });

  it('reports damage inside committed records: a section by its checksum, a record before a later commit as LOG_CORRUPT', async () => {
    const dir = tempDir();
    const writer = SearchIndex.open(dir, { merges: 'off' });
    for (let c = 0; c < 3; c++) {
      writer.stage(page(c, `words${c} `.repeat(50)));
      writer.commit();
    }
    const log = path.join(dir, logFileName(1));
    const scan = scanLog(log);
    const bytes = fs.readFileSync(log);
    // A byte in the middle of the first segment image (its postings), header and footer intact.
    const first = scan.groups[0]!.segments[0]!;
    const flipped = Buffer.from(bytes);
    flipped[first.offset + 40]! ^= 0xff;
    fs.writeFileSync(log, flipped);
    expect(checkIndex(dir).faults.map((f) => f.code)).toContain('SECTION_CHECKSUM');
    // The first record's header: everything after it would look like a torn tail, but commits follow.
    const header = Buffer.from(bytes);
    header[0]! ^= 0xff;
    fs.writeFileSync(log, header);
    expect(checkIndex(dir).faults.map((f) => f.code)).toEqual(['LOG_CORRUPT']);
    expect(() => SearchIndex.open(dir, { readOnly: true })).toThrow(/record at 0 is damaged, but commit 2/);
    fs.writeFileSync(log, bytes);
    expect(checkIndex(dir).faults).toEqual([]);
    await writer.close();
  });

  it('checkpoints the log past its bound into a segment file, removes the old log, and keeps every commit', async () => {
    const dir = tempDir();
    const bound = 32 * 1024;
    let index = SearchIndex.open(dir, { merges: 'inline', logBytes: bound });
    let largestCommit = 0;
    for (let c = 0; c < 60; c++) {
      const before = index.stats().logBytes;
      index.stage(page(c, `filler${c % 7} `.repeat(200), (c + 1) % 60));
      index.commit();
      largestCommit = Math.max(largestCommit, index.stats().logBytes - before);
      // The inline runner installs at the next turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await index.idle();
    const stats = index.stats();
    expect(stats.checkpoints).toBeGreaterThan(3);
    expect(stats.logBytes).toBeLessThan(bound + 2 * largestCommit);
    const logs = fs.readdirSync(dir).filter((f) => f.endsWith('.plg'));
    expect(logs.length).toBeLessThanOrEqual(2);
    expect(index.manifest.segments.length).toBeGreaterThan(0);
    expect(index.manifest.log).toBe(Math.min(...logs.map((f) => Number(f.slice(4, 10)))));
    expect(index.search('marker17').total).toBe(1);
    expect(urls(index, 'via16')).toEqual(['http://log.example/p17']);
    // Reopen without close (the log is replayed over the manifest's segments): the same 60 pages.
    index = SearchIndex.open(dir, { merges: 'off' });
    expect(index.stats().livePages).toBe(60);
    expect(index.stats().commits).toBe(60);
    expect(urls(index, 'via59')).toEqual(['http://log.example/p0']);
    await index.close();
    // A plain close leaves the log to the next open, which finds every commit in it.
    expect(checkIndex(dir).logSegments).toBeGreaterThan(0);
    index = SearchIndex.open(dir, { merges: 'off' });
    expect(index.stats().livePages).toBe(60);
    expect(urls(index, 'via59')).toEqual(['http://log.example/p0']);
    // A close asked to checkpoint merges what the log held into a segment file: nothing to replay.
    await index.close({ checkpoint: true });
    expect(checkIndex(dir)).toMatchObject({ faults: [], livePages: 60, logSegments: 0 });
  });
});
