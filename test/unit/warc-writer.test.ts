/**
 * The WARC writer and archive (queue-server/warc/): records land where `append` said, each file opens
 * with a warcinfo record and is rotated at its size bound, a torn tail is cut back on open to the last
 * whole record, and the archive turns 304s and duplicate payloads into revisits that warcio reads and
 * whose digests check. Every file written here is checked with warcio.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WarcError } from '../../shared/warc/errors.js';
import { buildCapture, type Capture, type WarcinfoContent } from '../../shared/warc/exchange.js';
import { parseWarcFileName, type CaptureLocation } from '../../queue-server/warc/location.js';
import { WarcArchive, WARC_DIR } from '../../queue-server/warc/warc-archive.js';
import { contiguousRuns, MAX_WRITE_RUN_BYTES, WarcWriter } from '../../queue-server/warc/warc-writer.js';
import { withFile, readAt, readRecord, warcField } from '../../queue-server/warc/warc-file.js';
import { FaultyFileOps } from '../support/faulty-file-ops.js';
import { checkWarcFile, checkWarcPath, exchangeOf, type ParsedRecord } from '../support/warc-exchange.js';

const INFO: WarcinfoContent = { software: 'Petrel/test', operator: 'ops@example.org', userAgent: null, settings: { scope: 'host' } };
const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'petrel-warc-'));
}

function capture(path: string, body: string, at: number, status = 200): Capture {
  return buildCapture(exchangeOf({ url: `http://127.0.0.1:9/${path}`, body, startedAt: at, status }), { maxBodyBytes: 1 << 20 });
}

function warcFiles(dir: string): string[] {
  return readdirSync(dir).filter((name) => parseWarcFileName(name) !== null).sort();
}

/** Checks every file of a directory with warcio (revisits may refer to records in earlier files). */
async function checkAll(dir: string): Promise<ParsedRecord[][]> {
  const all: ParsedRecord[] = [];
  const perFile: ParsedRecord[][] = [];
  for (const name of warcFiles(dir)) {
    const records = await checkWarcPath(join(dir, name), all);
    all.push(...records);
    perFile.push(records);
  }
  return perFile;
}

describe('WARC writer', () => {
  it('puts records where append said, after a warcinfo record naming the file, durable once committed', async () => {
    const dir = tempDir();
    const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const captures = [capture('a', 'alpha', T0), capture('b', 'beta'.repeat(100), T0 + 1), capture('c', '', T0 + 2, 404)];
    const locations = captures.map((c, i) => writer.append([c.requestRecord, c.responseRecord], T0 + i));
    expect(warcFiles(dir)).toEqual([]); // staged, nothing written yet
    writer.commit();
    const [name] = warcFiles(dir);
    expect(name).toBe('petrel-20260601120000000-00001.warc.gz');
    const records = await checkWarcPath(join(dir, name!));
    expect(records.map((r) => r.type)).toEqual(['warcinfo', 'request', 'response', 'request', 'response', 'request', 'response']);
    expect(records[0]!.headers.get('WARC-Filename')).toBe(name);
    for (const [i, [request, response]] of locations.entries()) {
      expect(request!.file).toBe(name);
      expect(response!.offset).toBe(request!.offset + request!.length);
      expect(records[1 + 2 * i]!.offset).toBe(request!.offset);
      expect(records[2 + 2 * i]!.offset).toBe(response!.offset);
      const bytes = withFile(join(dir, name!), (fd) => readAt(fd, response!.offset, response!.length));
      expect(bytes).toEqual(Buffer.from(captures[i]!.responseRecord));
    }
    expect(writer.stats()).toMatchObject({ records: 7, bytes: statSync(join(dir, name!)).size });
    writer.close();
  });

  it('begins a new file, opened by its own warcinfo, when the next capture would pass the size bound', async () => {
    const dir = tempDir();
    const writer = WarcWriter.open({ dir, maxFileBytes: 4096, warcinfo: INFO });
    let serialOfBig = -1;
    for (let i = 0; i < 40; i++) {
      // Small bodies; one of 16 KiB of random base64 (at least 12 KiB compressed), larger than the bound on its own.
      const body = i === 17 ? randomBytes(12_288).toString('base64') : `${i}:`.padEnd(300, String.fromCharCode(65 + (i % 26)));
      const made = capture(`p${i}`, body, T0 + i);
      const [request] = writer.append([made.requestRecord, made.responseRecord], T0 + i);
      if (i === 17) serialOfBig = parseWarcFileName(request!.file)!.serial;
      if (i % 7 === 0) writer.commit();
    }
    writer.close();
    const names = warcFiles(dir);
    expect(names.length).toBeGreaterThan(3);
    expect(names.map((n) => parseWarcFileName(n)!.serial)).toEqual(names.map((_, i) => i + 1));
    const perFile = await checkAll(dir);
    for (const [i, records] of perFile.entries()) {
      expect(records[0]!.type).toBe('warcinfo');
      expect(records.filter((r) => r.type === 'warcinfo')).toHaveLength(1);
      const size = statSync(join(dir, names[i]!)).size;
      if (parseWarcFileName(names[i]!)!.serial === serialOfBig) expect(records.filter((r) => r.type === 'response')).toHaveLength(1);
      else expect(size).toBeLessThanOrEqual(4096);
    }
    expect(perFile.flat().filter((r) => r.type === 'response')).toHaveLength(40);
  });

  it('cuts a torn last record on open, wherever the tear is, and writes the next run to a new file', async () => {
    for (const keep of [1, 23, 24, 25, 100, -9, -1]) {
      const dir = tempDir();
      const first = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO });
      const a = capture('a', 'alpha', T0);
      first.append([a.requestRecord, a.responseRecord], T0);
      first.close();
      const [name] = warcFiles(dir);
      const path = join(dir, name!);
      const whole = statSync(path).size;
      // A torn append: only a prefix of the next member reached the file.
      const torn = capture('b', 'beta'.repeat(200), T0 + 1).responseRecord;
      appendFileSync(path, torn.subarray(0, keep > 0 ? keep : torn.length + keep));
      const second = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO });
      expect(statSync(path).size, `tear keeping ${keep} bytes`).toBe(whole);
      const c = capture('c', 'gamma', T0 + 2);
      second.append([c.requestRecord, c.responseRecord], T0 + 2);
      second.close();
      expect(warcFiles(dir)).toHaveLength(2);
      const perFile = await checkAll(dir);
      expect(perFile.map((records) => records.map((r) => r.type))).toEqual([
        ['warcinfo', 'request', 'response'],
        ['warcinfo', 'request', 'response'],
      ]);
    }
  });

  it('cuts a last record whose bytes are whole in length but not in content, and removes a file with nothing whole left', async () => {
    const dir = tempDir();
    const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO });
    writer.append([capture('a', 'alpha', T0).requestRecord], T0);
    writer.close();
    const [name] = warcFiles(dir);
    const path = join(dir, name!);
    const good = statSync(path).size;
    const member = Buffer.from(capture('b', 'beta'.repeat(50), T0).responseRecord);
    member.fill(0, 30, 60); // a power loss can leave unwritten blocks inside a member of the right length
    appendFileSync(path, member);
    WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO }).close();
    expect(statSync(path).size).toBe(good);
    truncateSync(path, 10); // not even the warcinfo is whole
    WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO }).close();
    expect(warcFiles(dir)).toEqual([]);
  });
});

describe('WARC writer, one write per run of records', () => {
  const staged = (file: string, offset: number, length: number, fill: number) => ({ file, offset, bytes: Buffer.alloc(length, fill) });

  it('joins records that follow one another in a file, and starts a new run at another file, a gap or the size bound', () => {
    const a = staged('one.warc.gz', 0, 10, 1);
    const b = staged('one.warc.gz', 10, 5, 2);
    const c = staged('two.warc.gz', 15, 5, 3);
    const d = staged('two.warc.gz', 30, 5, 4);
    const runs = contiguousRuns([a, b, c, d]);
    expect(runs.map((run) => [run.file, run.offset, run.length])).toEqual([
      ['one.warc.gz', 0, 15],
      ['two.warc.gz', 15, 5],
      ['two.warc.gz', 30, 5],
    ]);
    // The records themselves, in order, not copies (the writer joins them in its staging buffer).
    expect(runs[0]!.records).toEqual([a.bytes, b.bytes]);
    expect(runs[0]!.records[1]).toBe(b.bytes);
    expect(runs[1]!.records).toEqual([c.bytes]);
    // Up to the bound exactly in one run; the next record begins another.
    const big = staged('one.warc.gz', 15, MAX_WRITE_RUN_BYTES - 15, 5);
    const after = staged('one.warc.gz', MAX_WRITE_RUN_BYTES, 20, 6);
    expect(contiguousRuns([a, b, big, after]).map((run) => [run.offset, run.length])).toEqual([
      [0, MAX_WRITE_RUN_BYTES],
      [MAX_WRITE_RUN_BYTES, 20],
    ]);
    expect(contiguousRuns([])).toEqual([]);
  });

  it('writes the captures of a commit in one write when they follow one another', async () => {
    const dir = tempDir();
    const io = new FaultyFileOps();
    const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO, io });
    for (let i = 0; i < 20; i++) {
      const c = capture(`p${i}`, `page ${i} `.repeat(50), T0 + i);
      writer.append([c.requestRecord, c.responseRecord], T0 + i);
    }
    writer.commit();
    const writes = io.ops.filter((op) => op.kind === 'write' && op.path.endsWith('.warc.gz'));
    expect(writes).toHaveLength(1);
    expect(writes[0]!.length).toBe(writer.stats().bytes);
    writer.close();
    const [name] = warcFiles(dir);
    const records = await checkWarcPath(join(dir, name!));
    expect(records).toHaveLength(41);
  });
  it('writes a commit larger than one run in several writes of at most MAX_WRITE_RUN_BYTES, each record whole and in place', async () => {
    const dir = tempDir();
    const io = new FaultyFileOps();
    const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO, io });
    writer.commit();
    const before = io.ops.length;
    // Random text barely compresses: about 150 KB a response record, some 1.8 MB in all.
    const bodies = Array.from({ length: 12 }, () => randomBytes(150_000).toString('base64'));
    bodies.forEach((body, i) => {
      const c = capture(`big${i}`, body, T0 + i);
      writer.append([c.requestRecord, c.responseRecord], T0 + i);
    });
    const durable = writer.stats().bytes;
    writer.commit();
    const writes = io.ops.slice(before).filter((op) => op.kind === 'write' && op.path.endsWith('.warc.gz'));
    const lengths = writes.map((op) => op.length ?? 0);
    expect(lengths.length).toBeGreaterThan(1);
    expect(lengths.every((length) => length > 0 && length <= MAX_WRITE_RUN_BYTES)).toBe(true);
    expect(lengths.reduce((sum, length) => sum + length, 0)).toBe(writer.stats().bytes - durable);
    writer.close();
    const [name] = warcFiles(dir);
    const responses = (await checkWarcPath(join(dir, name!))).filter((record) => record.type === 'response');
    expect(responses.map((record) => record.payload!.toString())).toEqual(bodies);
  });
});

describe('WARC writer on a failing disk (FileOps faults)', () => {
  for (const [fault, how] of [['short-write', 'commit'], ['eio', 'commit'], ['short-write', 'commitAsync'], ['eio', 'commitAsync']] as const) {
    it(`fails ${how} on ${fault === 'eio' ? 'an fsync EIO' : 'a torn write then ENOSPC'} with WARC_WRITE_FAILED, cuts the file back, and writes every staged record again on retry`, async () => {
      const commit = how === 'commit' ? (w: WarcWriter) => Promise.resolve().then(() => w.commit()) : (w: WarcWriter) => w.commitAsync();
      const dir = tempDir();
      const io = new FaultyFileOps();
      const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO, io });
      const first = capture('a', 'alpha'.repeat(300), T0);
      writer.append([first.requestRecord, first.responseRecord], T0);
      writer.commit();
      const durable = writer.stats().bytes;
      const second = capture('b', 'beta'.repeat(300), T0 + 1);
      const [request, response] = writer.append([second.requestRecord, second.responseRecord], T0 + 1);
      io.rule = (op) => (fault === 'eio' ? (op.kind === 'fsync' && op.path.endsWith('.warc.gz') ? 'eio' : null) : op.kind === 'write' && op.path.endsWith('.warc.gz') ? 'short-write' : null);
      let caught: unknown = null;
      try {
        await commit(writer);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(WarcError);
      expect((caught as WarcError).code).toBe('WARC_WRITE_FAILED');
      expect((caught as WarcError).errno).toBe(fault === 'eio' ? 'EIO' : 'ENOSPC');
      expect(io.failed.length).toBeGreaterThan(0);
      const [name] = warcFiles(dir);
      expect(statSync(join(dir, name!)).size).toBe(durable);
      expect(writer.stats().bytes).toBe(durable);
      // The disk is back: the retry writes both staged records, at the offsets handed out before (one
      // write: the two records follow one another).
      io.rule = null;
      io.reset();
      await commit(writer);
      const writes = io.ops.filter((op) => op.kind === 'write');
      expect(response!.offset).toBe(request!.offset + request!.length);
      expect(writes.map((op) => [op.position, op.length])).toEqual([[request!.offset, request!.length + response!.length]]);
      writer.close();
      const records = await checkWarcPath(join(dir, name!));
      expect(records.map((r) => r.headers.get('WARC-Target-URI') ?? r.type)).toEqual(['warcinfo', 'http://127.0.0.1:9/a', 'http://127.0.0.1:9/a', 'http://127.0.0.1:9/b', 'http://127.0.0.1:9/b']);
    });
  }
});

describe('WARC writer, fsync on the thread pool', () => {
  it('writes the records before commitAsync returns its promise, makes them durable when it resolves, and leaves what was staged meanwhile to the next commit', async () => {
    const dir = tempDir();
    const writer = WarcWriter.open({ dir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const a = capture('a', 'alpha'.repeat(300), T0);
    const [, response] = writer.append([a.requestRecord, a.responseRecord], T0);
    const syncing = writer.commitAsync();
    // Written (readable by another reader) already; counted durable only once the fsync returned.
    const [name] = warcFiles(dir);
    expect(statSync(join(dir, name!)).size).toBe(response!.offset + response!.length);
    expect(writer.stats().records).toBe(0);
    const b = capture('b', 'beta'.repeat(300), T0 + 1);
    writer.append([b.requestRecord, b.responseRecord], T0 + 1);
    await syncing;
    expect(writer.stats().records).toBe(3);
    expect(writer.stagedRecords).toBe(2);
    await writer.commitAsync();
    expect(writer.stagedRecords).toBe(0);
    writer.close();
    const records = await checkWarcPath(join(dir, name!));
    expect(records.map((r) => r.headers.get('WARC-Target-URI') ?? r.type)).toEqual(['warcinfo', 'http://127.0.0.1:9/a', 'http://127.0.0.1:9/a', 'http://127.0.0.1:9/b', 'http://127.0.0.1:9/b']);
  });
});

describe('WARC archive', () => {
  const at = (ms: number) => T0 + ms;

  it('stores a 304 as a server-not-modified revisit of the capture it revalidated and keeps the crawl db location on that capture', async () => {
    const dataDir = tempDir();
    const archive = WarcArchive.open({ dataDir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const first = archive.store(capture('page', 'content v1', at(0)), null, at(0));
    expect(first.decision).toEqual({ kind: 'response', indexDigest: true });
    const notModified = capture('page', '', at(5000), 304);
    const second = archive.store(notModified, first.location, at(5000));
    expect(second.decision).toMatchObject({ kind: 'revisit', target: { profile: 'server-not-modified', recordId: first.location.recordId, date: at(0) } });
    expect(second.location).toEqual(first.location);
    expect(second.written.kind).toBe('revisit');
    // Without a location (nothing archived before) a 304 is stored as the response it is.
    const orphan = archive.store(capture('other', '', at(6000), 304), null, at(6000));
    expect(orphan.decision).toEqual({ kind: 'response', indexDigest: false });
    archive.close();
    const [records] = await checkAll(join(dataDir, WARC_DIR));
    const revisit = records!.find((r) => r.type === 'revisit')!;
    expect(revisit.headers.get('WARC-Refers-To-Target-URI')).toBe('http://127.0.0.1:9/page');
    expect(revisit.headers.get('WARC-Refers-To')).toBe(first.location.recordId);
    expect(revisit.httpStatus).toBe(304);
  });

  it('stores an exact duplicate payload as an identical-payload-digest revisit, also across a restart', async () => {
    const dataDir = tempDir();
    let archive = WarcArchive.open({ dataDir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const body = '<html>the same body</html>';
    const original = archive.store(capture('one', body, at(0)), null, at(0));
    const copy = archive.store(capture('two', body, at(1)), null, at(1)); // same commit window: found while staged
    expect(copy.decision).toMatchObject({ kind: 'revisit', target: { profile: 'identical-payload-digest', recordId: original.location.recordId, targetUri: 'http://127.0.0.1:9/one' } });
    expect(copy.location.kind).toBe('revisit');
    // Truncated, empty and non-2xx payloads are never deduplicated.
    expect(archive.store(capture('three', '', at(2)), null, at(2)).decision.kind).toBe('response');
    expect(archive.store(capture('four', body, at(3), 404), null, at(3)).decision.kind).toBe('response');
    archive.commit();
    archive.close();
    archive = WarcArchive.open({ dataDir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const later = archive.store(capture('five', body, at(10_000)), null, at(10_000));
    expect(later.decision).toMatchObject({ kind: 'revisit', target: { recordId: original.location.recordId } });
    archive.close();
    const perFile = await checkAll(join(dataDir, WARC_DIR));
    expect(perFile).toHaveLength(2);
    expect(perFile.flat().filter((r) => r.type === 'revisit').map((r) => r.headers.get('WARC-Target-URI'))).toEqual(['http://127.0.0.1:9/two', 'http://127.0.0.1:9/five']);
    // The crawl db location of a revisit reads back as that revisit record.
    const location: CaptureLocation = later.location;
    const record = withFile(join(dataDir, WARC_DIR, location.file), (fd) => readRecord(fd, { offset: location.offset + location.requestLength, length: location.length - location.requestLength }));
    expect(warcField(record, 'WARC-Type')).toBe('revisit');
    expect(warcField(record, 'WARC-Record-ID')).toBe(location.recordId);
  });

  it('refuses a capture whose records are not one Petrel gzip member each, changing nothing (WARC_CAPTURE_INVALID)', async () => {
    const dataDir = tempDir();
    const archive = WarcArchive.open({ dataDir, maxFileBytes: 1 << 30, warcinfo: INFO });
    const good = capture('a', 'alpha', at(0));
    const bad: Capture[] = [
      { ...good, responseRecord: good.responseRecord.subarray(0, good.responseRecord.length - 1) },
      { ...good, requestRecord: Buffer.concat([good.requestRecord, good.responseRecord]) },
      { ...good, responseId: good.requestId },
      { ...good, url: 'javascript:alert(1)' },
    ];
    for (const capture of bad) {
      let caught: unknown = null;
      try {
        archive.store(capture, null, at(0));
      } catch (error) {
        caught = error;
      }
      expect((caught as WarcError).code).toBe('WARC_CAPTURE_INVALID');
    }
    archive.store(good, null, at(0));
    archive.close();
    const records = await checkWarcFile(readFileSync(join(dataDir, WARC_DIR, warcFiles(join(dataDir, WARC_DIR))[0]!)));
    expect(records.map((r) => r.type)).toEqual(['warcinfo', 'request', 'response']);
  });
});
