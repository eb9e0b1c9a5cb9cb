/**
 * Reads one segment file. Open reads the footer and the small sections (dictionary index, columns,
 * store index, meta) into memory and verifies their checksums; postings, dictionary blocks and stored
 * documents are read on demand with positioned reads (the OS page cache keeps hot ones). The big
 * sections' checksums are verified by `verify` (index check, and every merge that reads them).
 *
 * Resident per segment: the columns (29 bytes per entry, 10 per page doc, 9 per anchor doc), the
 * dictionary index (one term per 32) and the store index (16 bytes per 32 KiB block).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { crc32c } from '../storage/crc32c.js';
import { ByteReader } from './bytes.js';
import { IndexError } from './errors.js';
import { blockRecords, decodeHead, type StoredDocument, type StoredHead } from './doc-store.js';
import {
  checkHeader,
  columnLayout,
  columnsOnto,
  decodeFooter,
  FOOTER_BYTES,
  HEADER_BYTES,
  type Columns,
  type Footer,
  type SectionName,
} from './segment-format.js';
import type { SegmentMeta, TermPostings } from './segment-writer.js';

if (endianness() !== 'LE') throw new Error('the search index maps little-endian columns onto typed arrays: big-endian hosts are not supported');

/** Where one term's postings are, in the postings section. */
export interface TermInfo {
  readonly term: string;
  readonly pageDf: number;
  readonly pageDocsAt: number;
  readonly pageDocsLength: number;
  readonly pagePositionsLength: number;
  readonly anchorDf: number;
  readonly anchorDocsAt: number;
  readonly anchorDocsLength: number;
  readonly anchorPositionsLength: number;
}

export type StoreKind = 'head' | 'text';

export interface StoreBlockRef {
  readonly offset: number;
  readonly length: number;
  readonly firstRecord: number;
  readonly records: number;
}

export class SegmentReader {
  readonly path: string;
  readonly footer: Footer;
  readonly columns: Columns;
  readonly meta: SegmentMeta;
  /** Bytes of the segment (of its file, or of its record in the commit log). */
  readonly fileBytes: number;
  readonly #fd: number;
  /** Where the segment starts in its file: 0, or its record's payload in the commit log. */
  readonly #base: number;
  readonly #blockFirstTerms: string[];
  readonly #blockOffsets: number[];
  readonly #blockPostings: number[];
  readonly #store: Record<StoreKind, StoreBlockRef[]>;
  /** The last few decompressed store blocks (results pages read neighbours). */
  readonly #storeCache = new Map<string, Uint8Array>();
  #closed = false;

  private constructor(path: string, fd: number, base: number, fileBytes: number, footer: Footer) {
    this.path = path;
    this.#fd = fd;
    this.#base = base;
    this.fileBytes = fileBytes;
    this.footer = footer;
    const { entries, pages, anchors } = footer;

    const columnsBytes = this.#section('columns', true);
    const layout = columnLayout(entries, pages, anchors);
    if (columnsBytes.length !== layout.bytes) throw this.#corrupt(`columns section has ${columnsBytes.length} bytes, expected ${layout.bytes}`);
    // A fresh, 4-byte aligned copy so typed arrays can be mapped onto it.
    const aligned = new ArrayBuffer(columnsBytes.length);
    new Uint8Array(aligned).set(columnsBytes);
    this.columns = columnsOnto(aligned, 0, entries, pages, anchors);

    try {
      this.meta = JSON.parse(Buffer.from(this.#section('meta', true)).toString('utf8')) as SegmentMeta;
    } catch (error) {
      throw error instanceof IndexError ? error : this.#corrupt('meta section is not JSON');
    }

    const index = new ByteReader(this.#section('dictionaryIndex', true));
    const blocks = index.varint();
    this.#blockFirstTerms = [];
    this.#blockOffsets = [];
    this.#blockPostings = [];
    for (let b = 0; b < blocks; b++) {
      this.#blockFirstTerms.push(index.string());
      this.#blockOffsets.push(index.varint());
      this.#blockPostings.push(index.varint());
    }
    for (let b = 1; b < blocks; b++) {
      if (!(this.#blockFirstTerms[b - 1]! < this.#blockFirstTerms[b]!)) throw this.#corrupt(`dictionary index out of order at block ${b}`);
    }

    const storeIndex = new ByteReader(this.#section('storeIndex', true));
    this.#store = { head: [], text: [] };
    for (const kind of ['head', 'text'] as const) {
      const count = storeIndex.varint();
      for (let b = 0; b < count; b++) {
        this.#store[kind].push({ offset: storeIndex.varint(), length: storeIndex.varint(), firstRecord: storeIndex.varint(), records: storeIndex.varint() });
      }
    }
  }

  /** Opens a segment file, or (`range`) a segment held in part of a file: a commit log record's payload. */
  static open(path: string, range?: { readonly offset: number; readonly length: number }): SegmentReader {
    const fd = openSync(path, 'r');
    try {
      const base = range?.offset ?? 0;
      const fileBytes = range?.length ?? fstatSync(fd).size;
      const name = range === undefined ? path : `${path}@${base}`;
      if (fileBytes < HEADER_BYTES + FOOTER_BYTES) throw new IndexError('INDEX_CORRUPT', `${name}: ${fileBytes} bytes, too short for a segment`);
      const header = Buffer.alloc(HEADER_BYTES);
      readFully(fd, header, base);
      checkHeader(header, name);
      const footerBytes = Buffer.alloc(FOOTER_BYTES);
      readFully(fd, footerBytes, base + fileBytes - FOOTER_BYTES);
      return new SegmentReader(name, fd, base, fileBytes, decodeFooter(footerBytes, fileBytes, name));
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  get blockCount(): number {
    return this.#blockFirstTerms.length;
  }

  #corrupt(message: string): IndexError {
    return new IndexError('INDEX_CORRUPT', `${this.path}: ${message}`);
  }

  /** Reads a section (`verify`: check its CRC-32C). */
  #section(name: SectionName, verify: boolean): Uint8Array {
    const ref = this.footer.sections[name];
    const bytes = this.read(ref.offset, ref.length);
    if (verify && crc32c(bytes) !== ref.crc) throw this.#corrupt(`section ${name} checksum mismatch`);
    return bytes;
  }

  /** Verifies the checksum of a section (postings, dictionary and store blocks are not verified at open). */
  verifySection(name: SectionName): boolean {
    const ref = this.footer.sections[name];
    let crc = 0;
    const chunk = 1 << 20;
    for (let at = 0; at < ref.length; at += chunk) {
      const bytes = this.read(ref.offset + at, Math.min(chunk, ref.length - at));
      crc = crc32c(bytes, 0, bytes.length, crc);
    }
    return crc === ref.crc;
  }

  read(offset: number, length: number): Uint8Array {
    if (this.#closed) throw new IndexError('INDEX_CLOSED', `${this.path} is closed`);
    const out = Buffer.allocUnsafe(length);
    readFully(this.#fd, out, this.#base + offset);
    return out;
  }

  /** The term's postings location, or null when the segment does not have it. */
  lookup(term: string): TermInfo | null {
    const firsts = this.#blockFirstTerms;
    let lo = 0;
    let hi = firsts.length - 1;
    if (hi < 0 || term < firsts[0]!) return null;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (firsts[mid]! <= term) lo = mid;
      else hi = mid - 1;
    }
    const dict = this.footer.sections.dictionary;
    const start = this.#blockOffsets[lo]!;
    const end = lo + 1 < this.#blockOffsets.length ? this.#blockOffsets[lo + 1]! : dict.length;
    if (start > end || end > dict.length) throw this.#corrupt(`dictionary block ${lo} out of bounds`);
    return findInBlock(this.read(dict.offset + start, end - start), Buffer.from(term, 'utf8'), term, this.#blockPostings[lo]!, this.footer.sections.postings.offset, (m) => this.#corrupt(`dictionary block ${lo}: ${m}`));
  }

  /** The terms of block `b` with their postings locations. */
  #blockTerms(b: number): TermInfo[] {
    const dict = this.footer.sections.dictionary;
    const start = this.#blockOffsets[b]!;
    const end = b + 1 < this.#blockOffsets.length ? this.#blockOffsets[b + 1]! : dict.length;
    if (start > end || end > dict.length) throw this.#corrupt(`dictionary block ${b} out of bounds`);
    return decodeBlock(this.read(dict.offset + start, end - start), this.#blockPostings[b]!, this.footer.sections.postings.offset, (m) => this.#corrupt(`dictionary block ${b}: ${m}`));
  }

  /** Every term in order (merge, check): reads the dictionary block by block. */
  *terms(): Generator<TermInfo> {
    for (let b = 0; b < this.#blockFirstTerms.length; b++) yield* this.#blockTerms(b);
  }

  /** The first term of each dictionary block (check compares them with the blocks). */
  blockFirstTerm(b: number): string {
    return this.#blockFirstTerms[b]!;
  }

  /** The bytes of a term's postings: page docs + positions, anchor docs + positions. */
  postings(info: TermInfo): TermPostings<Uint8Array> {
    const { first, length } = postingsSpan(info);
    return postingsAt(info, this.read(first, length), 0);
  }

  /** Only the page doc stream (scoring a word needs no positions). */
  pageDocs(info: TermInfo): Uint8Array {
    return this.read(info.pageDocsAt, info.pageDocsLength);
  }

  /** Only the page position stream (proximity, which has the doc stream from scoring). */
  pagePositions(info: TermInfo): Uint8Array {
    return this.read(info.pageDocsAt + info.pageDocsLength, info.pagePositionsLength);
  }

  anchorDocs(info: TermInfo): Uint8Array {
    return this.read(info.anchorDocsAt, info.anchorDocsLength);
  }

  storeBlocks(kind: StoreKind): readonly StoreBlockRef[] {
    return this.#store[kind];
  }

  /** The raw bytes (codec byte and payload) of a store block. */
  storeBlockBytes(kind: StoreKind, b: number): Uint8Array {
    const ref = this.#store[kind][b]!;
    const section = this.footer.sections.storeBlocks;
    if (ref.offset + ref.length > section.length || ref.length < 1) throw this.#corrupt(`${kind} block ${b} out of bounds`);
    return this.read(section.offset + ref.offset, ref.length);
  }

  /** The records of a store block, decompressed. */
  storeBlock(kind: StoreKind, b: number): Uint8Array {
    const key = `${kind}${b}`;
    const cached = this.#storeCache.get(key);
    if (cached !== undefined) return cached;
    const bytes = blockRecords(this.storeBlockBytes(kind, b), `${this.path}: ${kind} block ${b}`);
    if (this.#storeCache.size >= 16) this.#storeCache.delete(this.#storeCache.keys().next().value!);
    this.#storeCache.set(key, bytes);
    return bytes;
  }

  /** A reader positioned at page `page`'s record in its block of the given kind. */
  #record(kind: StoreKind, page: number): ByteReader {
    const blocks = this.#store[kind];
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (blocks[mid]!.firstRecord <= page) lo = mid;
      else hi = mid - 1;
    }
    const ref = blocks[lo];
    if (ref === undefined || page < ref.firstRecord || page >= ref.firstRecord + ref.records) throw this.#corrupt(`no ${kind} record for page ${page}`);
    const reader = new ByteReader(this.storeBlock(kind, lo));
    for (let r = ref.firstRecord; r < page; r++) {
      if (kind === 'head') decodeHead(reader);
      else reader.take(reader.varint());
    }
    return reader;
  }

  /** URL, title, language and fetch time of page doc `page` (no text decompressed). */
  head(page: number): StoredHead {
    return decodeHead(this.#record('head', page));
  }

  /** The stored text of page doc `page`. */
  text(page: number): string {
    return this.#record('text', page).string();
  }

  document(page: number): StoredDocument {
    return { ...this.head(page), text: this.text(page) };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}

function readFully(fd: number, into: Uint8Array, position: number): void {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new IndexError('INDEX_CORRUPT', `unexpected end of file at ${position + done}`);
    done += n;
  }
}

/** The previous term of a block scan, rebuilt in place (terms are at most 64 UTF-16 units: 256 bytes). */
const scanTerm = Buffer.alloc(1024);

/** Looks a term up in one dictionary block by comparing bytes: no string is made for the others. */
function findInBlock(bytes: Uint8Array, target: Buffer, term: string, postingsBase: number, postingsSectionOffset: number, corrupt: (message: string) => IndexError): TermInfo | null {
  const reader = new ByteReader(bytes);
  const count = reader.varint();
  let length = 0;
  let at = postingsSectionOffset + postingsBase;
  for (let i = 0; i < count; i++) {
    const prefix = reader.varint();
    const suffixLength = reader.varint();
    if (prefix > length || prefix + suffixLength > scanTerm.length) throw corrupt(`term ${i} does not fit`);
    const suffix = reader.take(suffixLength);
    scanTerm.set(suffix, prefix);
    length = prefix + suffixLength;
    const pageDf = reader.varint();
    const anchorDf = reader.varint();
    const pageDocsLength = pageDf > 0 ? reader.varint() : 0;
    const pagePositionsLength = pageDf > 0 ? reader.varint() : 0;
    const anchorDocsLength = anchorDf > 0 ? reader.varint() : 0;
    const anchorPositionsLength = anchorDf > 0 ? reader.varint() : 0;
    const pageDocsAt = at;
    const anchorDocsAt = at + pageDocsLength + pagePositionsLength;
    at = anchorDocsAt + anchorDocsLength + anchorPositionsLength;
    if (length === target.length && target.compare(scanTerm, 0, length) === 0) {
      return { term, pageDf, pageDocsAt, pageDocsLength, pagePositionsLength, anchorDf, anchorDocsAt, anchorDocsLength, anchorPositionsLength };
    }
  }
  return null;
}

function decodeBlock(bytes: Uint8Array, postingsBase: number, postingsSectionOffset: number, corrupt: (message: string) => IndexError): TermInfo[] {
  const reader = new ByteReader(bytes);
  const count = reader.varint();
  const out: TermInfo[] = [];
  let previous = Buffer.alloc(0);
  let at = postingsSectionOffset + postingsBase;
  for (let i = 0; i < count; i++) {
    const prefix = reader.varint();
    const suffix = reader.take(reader.varint());
    if (prefix > previous.length) throw corrupt(`term ${i} shares ${prefix} bytes with a ${previous.length}-byte term`);
    const encoded = Buffer.concat([previous.subarray(0, prefix), suffix]);
    const pageDf = reader.varint();
    const anchorDf = reader.varint();
    let pageDocsLength = 0;
    let pagePositionsLength = 0;
    let anchorDocsLength = 0;
    let anchorPositionsLength = 0;
    if (pageDf > 0) {
      pageDocsLength = reader.varint();
      pagePositionsLength = reader.varint();
    }
    if (anchorDf > 0) {
      anchorDocsLength = reader.varint();
      anchorPositionsLength = reader.varint();
    }
    const pageDocsAt = at;
    const anchorDocsAt = at + pageDocsLength + pagePositionsLength;
    at = anchorDocsAt + anchorDocsLength + anchorPositionsLength;
    out.push({ term: encoded.toString('utf8'), pageDf, pageDocsAt, pageDocsLength, pagePositionsLength, anchorDf, anchorDocsAt, anchorDocsLength, anchorPositionsLength });
    previous = encoded;
  }
  if (!reader.done) throw corrupt(`${reader.end - reader.pos} bytes after the last term`);
  return out;
}

/** Where a term's postings lie in the segment: its four streams are contiguous, page docs first (or anchor docs, when no page has the term). */
export function postingsSpan(info: TermInfo): { first: number; length: number } {
  return {
    first: info.pageDf > 0 ? info.pageDocsAt : info.anchorDocsAt,
    length: info.pageDocsLength + info.pagePositionsLength + info.anchorDocsLength + info.anchorPositionsLength,
  };
}

/** A term's four posting streams as views of `bytes`, which holds its span from offset `at` on. */
export function postingsAt(info: TermInfo, bytes: Uint8Array, at: number): TermPostings<Uint8Array> {
  const take = (n: number): Uint8Array => bytes.subarray(at, (at += n));
  return {
    term: info.term,
    pageDf: info.pageDf,
    pageDocs: take(info.pageDocsLength),
    pagePositions: take(info.pagePositionsLength),
    anchorDf: info.anchorDf,
    anchorDocs: take(info.anchorDocsLength),
    anchorPositions: take(info.anchorPositionsLength),
  };
}
