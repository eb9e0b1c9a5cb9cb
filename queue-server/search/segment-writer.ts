/**
 * Writes one immutable segment file from a SegmentContent, streaming: postings go to the file term by
 * term as they come (from the staging buffer, or from a k-way merge of other segments), the small
 * sections follow, the footer last, then one fsync. The file is created exclusively (`wx`) under a
 * name no manifest references yet, so a crash mid-write leaves an orphan that the next open removes.
 *
 * Memory: the write buffer (1 MiB), the dictionary of the segment being written (about 12 bytes per
 * term plus the term) and its block index; postings and stored documents pass through.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { crc32c } from '../storage/crc32c.js';
import { ByteWriter, rawBytes, type Bytes } from './bytes.js';
import type { StoreBlock } from './doc-store.js';
import {
  DICTIONARY_BLOCK_TERMS,
  encodeColumns,
  encodeFooter,
  encodeHeader,
  HEADER_BYTES,
  SECTIONS,
  type Columns,
  type SectionName,
  type SectionRef,
} from './segment-format.js';

/** One term's postings in a segment: page postings (docs, positions) and anchor postings. */
export interface TermPostings<B extends Bytes = Bytes> {
  readonly term: string;
  readonly pageDf: number;
  readonly pageDocs: B;
  readonly pagePositions: B;
  readonly anchorDf: number;
  readonly anchorDocs: B;
  readonly anchorPositions: B;
}

export interface SegmentContent {
  readonly entries: number;
  readonly pages: number;
  readonly anchors: number;
  readonly columns: Columns;
  /** Snowball algorithms the segment's terms were stemmed with (queries expand words over them). */
  readonly stemmers: readonly string[];
  /** In strictly ascending order of the terms (JavaScript string order: UTF-16 code units). */
  readonly terms: Iterable<TermPostings>;
  /** Head records (URL, title, language, fetch time) of the page docs, in page order (doc-store.ts). */
  readonly headBlocks: Iterable<StoreBlock>;
  /** Text records of the page docs, in page order. */
  readonly textBlocks: Iterable<StoreBlock>;
}

export interface SegmentMeta {
  readonly stemmers: string[];
  /** Sum of the page docs' field lengths (tokens), for BM25's average lengths. */
  readonly lengthSums: { title: number; heading: number; body: number; anchor: number };
}

class SectionFile {
  readonly #fd: number;
  readonly #buffer = Buffer.allocUnsafe(1 << 20);
  /** Where the segment starts in the file (0 for a segment file; a record's payload in the commit log). */
  readonly #start: number;
  #buffered = 0;
  /** Bytes written so far, from the segment's start (what the footer's offsets count from). */
  #offset = 0;
  /** Bytes handed to the file so far. */
  #flushed = 0;
  #sectionStart = 0;
  #crc = 0;
  /**
   * Buffered bytes from here on are not in #crc yet: the checksum is taken over long runs of the
   * buffer (at a section's end and at a flush) rather than per write, since most writes are postings
   * of a few bytes and slicing-by-8 only pays on runs of 8 and more (profiled: the per-write CRC was
   * most of a commit's segment write).
   */
  #crcFrom = 0;

  constructor(fd: number, start: number) {
    this.#fd = fd;
    this.#start = start;
  }

  get offset(): number {
    return this.#offset;
  }

  write(source: Bytes): void {
    const length = source.length;
    const bytes = rawBytes(source);
    this.#offset += length;
    if (length > this.#buffer.length - this.#buffered) {
      this.flush();
      if (length > this.#buffer.length) {
        this.#crc = crc32c(bytes, 0, length, this.#crc);
        writeAll(this.#fd, bytes.subarray(0, length), this.#start + this.#flushed);
        this.#flushed += length;
        return;
      }
    }
    const buffer = this.#buffer;
    let at = this.#buffered;
    // Most postings are a few bytes: a loop beats creating a view to copy them.
    if (length < 64) for (let i = 0; i < length; i++) buffer[at++] = bytes[i]!;
    else buffer.set(bytes.subarray(0, length), at);
    this.#buffered += length;
  }

  beginSection(): void {
    this.#sectionStart = this.#offset;
    this.#crc = 0;
    this.#crcFrom = this.#buffered;
  }

  endSection(): SectionRef {
    this.#foldCrc();
    return { offset: this.#sectionStart, length: this.#offset - this.#sectionStart, crc: this.#crc };
  }

  #foldCrc(): void {
    if (this.#buffered > this.#crcFrom) this.#crc = crc32c(this.#buffer, this.#crcFrom, this.#buffered, this.#crc);
    this.#crcFrom = this.#buffered;
  }

  flush(): void {
    this.#foldCrc();
    this.#crcFrom = 0;
    if (this.#buffered > 0) writeAll(this.#fd, this.#buffer.subarray(0, this.#buffered), this.#start + this.#flushed);
    this.#flushed += this.#buffered;
    this.#buffered = 0;
  }
}

/** Positioned writes: the commit log's file is written at offsets the log keeps (commit-log.ts). */
function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
}

/** Writes the segment to `path` (which must not exist), fsyncs it, and returns its size and term count. */
export function writeSegment(path: string, content: SegmentContent): { bytes: number; terms: number } {
  const fd = openSync(path, 'wx', 0o600);
  try {
    const written = writeSegmentAt(fd, 0, content);
    fsyncSync(fd);
    return written;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the segment into an open file at `start` (the same bytes as a segment file), without any
 * fsync: the commit log appends one per commit and syncs once for the whole commit (commit-log.ts).
 */
export function writeSegmentAt(fd: number, start: number, content: SegmentContent): { bytes: number; terms: number } {
  {
    const out = new SectionFile(fd, start);
    const refs = {} as Record<SectionName, SectionRef>;
    out.write(encodeHeader());

    const dictionary = new ByteWriter(1 << 16);
    const blockIndex = new ByteWriter(1 << 12);
    const block = new ByteWriter(1 << 12);
    let blocks = 0;
    let inBlock = 0;
    // The term being written and the one before it, as UTF-8 (two buffers taking turns: a Buffer per
    // term was 0.6 s of a 100-commit benchmark build).
    let current = new TermBytes();
    let previous = new TermBytes();
    let hasPrevious = false;
    let previousTerm: string | null = null;
    let terms = 0;
    const flushBlock = (): void => {
      if (inBlock === 0) return;
      dictionary.varint(inBlock);
      dictionary.bytes(block.view());
      block.reset();
      inBlock = 0;
    };

    out.beginSection();
    for (const t of content.terms) {
      if (previousTerm !== null && !(previousTerm < t.term)) throw new Error(`segment terms out of order: ${JSON.stringify(previousTerm)} then ${JSON.stringify(t.term)}`);
      if (t.pageDf === 0 && t.anchorDf === 0) continue;
      current.encode(t.term);
      if (inBlock === DICTIONARY_BLOCK_TERMS) flushBlock();
      if (inBlock === 0) {
        blocks++;
        blockIndex.string(t.term);
        blockIndex.varint(dictionary.length);
        blockIndex.varint(out.offset - HEADER_BYTES);
        hasPrevious = false;
      }
      const prefix = hasPrevious ? sharedPrefix(previous, current) : 0;
      block.varint(prefix);
      block.varint(current.length - prefix);
      block.range(current.bytes, prefix, current.length);
      block.varint(t.pageDf);
      block.varint(t.anchorDf);
      if (t.pageDf > 0) {
        block.varint(t.pageDocs.length);
        block.varint(t.pagePositions.length);
        out.write(t.pageDocs);
        out.write(t.pagePositions);
      }
      if (t.anchorDf > 0) {
        block.varint(t.anchorDocs.length);
        block.varint(t.anchorPositions.length);
        out.write(t.anchorDocs);
        out.write(t.anchorPositions);
      }
      inBlock++;
      terms++;
      const written = previous;
      previous = current;
      current = written;
      hasPrevious = true;
      previousTerm = t.term;
    }
    flushBlock();
    refs.postings = out.endSection();

    out.beginSection();
    out.write(dictionary.view());
    refs.dictionary = out.endSection();

    out.beginSection();
    const indexHead = new ByteWriter(8);
    indexHead.varint(blocks);
    out.write(indexHead.view());
    out.write(blockIndex.view());
    refs.dictionaryIndex = out.endSection();

    out.beginSection();
    out.write(encodeColumns(content.columns, content.entries, content.pages, content.anchors));
    refs.columns = out.endSection();

    out.beginSection();
    const storeStart = out.offset;
    const storeIndex = new ByteWriter(1 << 10);
    for (const [kind, blocks] of [['head', content.headBlocks], ['text', content.textBlocks]] as const) {
      const entries = new ByteWriter(1 << 10);
      let count = 0;
      let records = 0;
      for (const b of blocks) {
        entries.varint(out.offset - storeStart);
        entries.varint(b.bytes.length);
        entries.varint(records);
        entries.varint(b.records);
        out.write(b.bytes);
        records += b.records;
        count++;
      }
      if (records !== content.pages) throw new Error(`segment store holds ${records} ${kind} records for ${content.pages} pages`);
      storeIndex.varint(count);
      storeIndex.bytes(entries.view());
    }
    refs.storeBlocks = out.endSection();

    out.beginSection();
    out.write(storeIndex.view());
    refs.storeIndex = out.endSection();

    out.beginSection();
    const c = content.columns;
    let title = 0;
    let heading = 0;
    let body = 0;
    let anchor = 0;
    for (let p = 0; p < content.pages; p++) {
      title += c.pageTitleLength[p]!;
      heading += c.pageHeadingLength[p]!;
      body += c.pageBodyLength[p]!;
    }
    for (let a = 0; a < content.anchors; a++) anchor += c.anchorLength[a]!;
    const meta: SegmentMeta = { stemmers: [...content.stemmers].sort(), lengthSums: { title, heading, body, anchor } };
    out.write(Buffer.from(JSON.stringify(meta), 'utf8'));
    refs.meta = out.endSection();

    for (const name of SECTIONS) if (refs[name] === undefined) throw new Error(`section ${name} not written`);
    out.write(encodeFooter({ sections: refs, entries: content.entries, pages: content.pages, anchors: content.anchors, terms }));
    out.flush();
    return { bytes: out.offset, terms };
  }
}

/** A term's UTF-8 bytes in a buffer reused from term to term. */
class TermBytes {
  bytes = Buffer.allocUnsafe(256);
  length = 0;

  encode(term: string): void {
    if (term.length * 3 > this.bytes.length) this.bytes = Buffer.allocUnsafe(term.length * 3);
    const bytes = this.bytes;
    const n = term.length;
    for (let i = 0; i < n; i++) {
      const unit = term.charCodeAt(i);
      if (unit >= 0x80) {
        this.length = bytes.write(term, 0, 'utf8');
        return;
      }
      bytes[i] = unit;
    }
    this.length = n;
  }
}

function sharedPrefix(a: TermBytes, b: TermBytes): number {
  const n = Math.min(a.length, b.length, 255);
  const x = a.bytes;
  const y = b.bytes;
  let i = 0;
  while (i < n && x[i] === y[i]) i++;
  return i;
}
