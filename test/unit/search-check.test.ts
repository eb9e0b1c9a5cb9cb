/**
 * `checkIndex` (queue-server/search/check.ts) finds injected corruption: torn or flipped bytes caught
 * by checksums, and well-checksummed but inconsistent files (what a bug in the writer would leave)
 * caught by the structural checks. Each case damages a fresh copy of one clean index.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc32c } from '../../queue-server/storage/crc32c.js';
import { buildIndexData } from '../../shared/index-data.js';
import { checkIndex, type IndexFaultCode } from '../../queue-server/search/check.js';
import { readManifest, writeManifest, type Manifest } from '../../queue-server/search/manifest.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { decodeFooter, encodeFooter, FOOTER_BYTES, type SectionName } from '../../queue-server/search/segment-format.js';
import { tempDir } from '../support/search-model.js';

let clean = '';

beforeAll(async () => {
  clean = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-index-clean-'));
  // logBytes 1: each commit is checkpointed into a segment file of its own (three segments to damage).
  const index = SearchIndex.open(clean, { merges: 'off', logBytes: 1 });
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 40; i++) {
      index.stage({
        kind: 'page',
        url: `http://c${i % 4}.example/p${i}`,
        fetchedAt: round,
        data: buildIndexData({ title: `Page ${i}`, headings: ['Heading words'], bodyText: `alpha beta gamma round${round} item${i} `.repeat(5), language: 'en', anchors: [{ url: `http://c0.example/p${(i + 1) % 40}`, text: `anchor ${i}` }] }),
      });
    }
    index.stage({ kind: 'remove', url: 'http://c1.example/p1' });
    index.commit();
  }
  await index.close();
});

afterAll(() => {
  if (clean !== '') fs.rmSync(clean, { recursive: true, force: true });
});

function copy(): string {
  const dir = tempDir('petrel-index-damaged-');
  for (const file of fs.readdirSync(clean)) fs.copyFileSync(path.join(clean, file), path.join(dir, file));
  return dir;
}

function codes(dir: string): IndexFaultCode[] {
  return [...new Set(checkIndex(dir).faults.map((f) => f.code))].sort();
}

function firstSegment(dir: string): string {
  return path.join(dir, readManifest(dir)!.segments[0]!.file);
}

/** Rewrites one section with `mutate` and fixes its CRC and the footer's, as a buggy writer would have written it. */
function rewriteSection(file: string, name: SectionName, mutate: (bytes: Buffer) => void): void {
  const bytes = fs.readFileSync(file);
  const footer = decodeFooter(bytes.subarray(bytes.length - FOOTER_BYTES), bytes.length, file);
  const ref = footer.sections[name];
  const section = bytes.subarray(ref.offset, ref.offset + ref.length);
  mutate(section);
  const sections = { ...footer.sections, [name]: { ...ref, crc: crc32c(section) } };
  encodeFooter({ ...footer, sections }).copy(bytes, bytes.length - FOOTER_BYTES);
  fs.writeFileSync(file, bytes);
}

function sectionOf(file: string, name: SectionName): { offset: number; length: number } {
  const bytes = fs.readFileSync(file);
  return decodeFooter(bytes.subarray(bytes.length - FOOTER_BYTES), bytes.length, file).sections[name];
}

describe('index check', () => {
  it('passes the clean index', () => {
    const report = checkIndex(clean);
    expect(report.faults).toEqual([]);
    expect(report.segments).toBe(3);
    expect(report.livePages).toBe(39);
  });

  it('finds a flipped byte in the postings by its checksum', () => {
    const dir = copy();
    const file = firstSegment(dir);
    const { offset, length } = sectionOf(file, 'postings');
    const bytes = fs.readFileSync(file);
    bytes[offset + Math.floor(length / 2)]! ^= 0x40;
    fs.writeFileSync(file, bytes);
    expect(codes(dir)).toContain('SECTION_CHECKSUM');
  });

  it('finds a flipped byte in the stored documents', () => {
    const dir = copy();
    const file = firstSegment(dir);
    const { offset } = sectionOf(file, 'storeBlocks');
    const bytes = fs.readFileSync(file);
    bytes[offset + 10]! ^= 0xff;
    fs.writeFileSync(file, bytes);
    expect(codes(dir)).toContain('SECTION_CHECKSUM');
  });

  it('finds a torn segment (cut short) and a damaged column section', () => {
    const torn = copy();
    const file = firstSegment(torn);
    fs.truncateSync(file, fs.statSync(file).size - 100);
    expect(codes(torn)).toEqual(['SEGMENT_CORRUPT']);
    const flipped = copy();
    const other = firstSegment(flipped);
    const { offset } = sectionOf(other, 'columns');
    const bytes = fs.readFileSync(other);
    bytes[offset + 3]! ^= 1;
    fs.writeFileSync(other, bytes);
    expect(codes(flipped)).toEqual(['SEGMENT_CORRUPT']);
  });

  it('finds a damaged manifest and a damaged deletion file', () => {
    const manifest = copy();
    const text = fs.readFileSync(path.join(manifest, 'MANIFEST'), 'utf8');
    fs.writeFileSync(path.join(manifest, 'MANIFEST'), text.replace('"commits":3', '"commits":4'));
    expect(codes(manifest)).toEqual(['MANIFEST_CORRUPT']);
    const deletions = copy();
    const withDeletions = readManifest(deletions)!.segments.find((s) => s.deletions !== null)!;
    const del = path.join(deletions, withDeletions.deletions!);
    const bytes = fs.readFileSync(del);
    bytes[bytes.length - 6]! ^= 0x10;
    fs.writeFileSync(del, bytes);
    expect(codes(deletions)).toContain('DELETIONS_CORRUPT');
  });

  it('finds postings and entries that do not refer to each other, checksums notwithstanding', () => {
    const dir = copy();
    const file = firstSegment(dir);
    // Entry 0's page number (column entryPage starts after two u32 columns of `entries` values) points at page 1.
    const entries = readManifest(dir)!.segments[0]!.entries;
    rewriteSection(file, 'columns', (bytes) => {
      bytes.writeUInt32LE(1, entries * 8);
    });
    expect(codes(dir)).toEqual(expect.arrayContaining(['COLUMNS_INVALID', 'POSTING_INVALID']));
  });

  it('finds a dictionary whose index does not match its blocks', () => {
    const dir = copy();
    const file = firstSegment(dir);
    rewriteSection(file, 'dictionaryIndex', (bytes) => {
      // The first block's first term is written right after the block count and its length: change its last letter.
      const length = bytes[1]!;
      bytes[2 + length - 1] = bytes[2 + length - 1]! + 1;
    });
    expect(codes(dir)).toContain('TERMS_UNSORTED');
  });

  it('finds a URL with live entries in two segments', () => {
    const dir = copy();
    const manifest = readManifest(dir)!;
    const first = manifest.segments[0]!;
    fs.copyFileSync(path.join(dir, first.file), path.join(dir, 'seg-000900.psg'));
    const doubled: Manifest = { ...manifest, generation: manifest.generation + 1, segments: [...manifest.segments, { ...first, id: 900, file: 'seg-000900.psg', deletions: null, deleted: 0 }] };
    writeManifest(dir, doubled);
    expect(codes(dir)).toEqual(['DUPLICATE_LIVE_ENTRY']);
  });
});
