/**
 * The byte layout of a segment file: header, sections, footer (LAYOUT.md draws it). Only the codec of
 * the fixed parts lives here; the sections' contents are encoded by segment-writer.ts and decoded by
 * segment-reader.ts.
 *
 *   header (32 B) | postings | dictionary | dictionary index | columns | store blocks | store index | meta | footer (208 B)
 *
 * The footer names every section's offset, length and CRC-32C, so a reader finds everything from the
 * last 208 bytes and `index check` can verify each section on its own.
 */
import { crc32c } from '../storage/crc32c.js';
import { IndexError } from './errors.js';

export const SEGMENT_MAGIC = 'PETRELSG';
export const FOOTER_MAGIC = 'PETRELSF';
export const SEGMENT_VERSION = 1;
export const HEADER_BYTES = 32;
export const FOOTER_BYTES = 208;

export const SECTIONS = ['postings', 'dictionary', 'dictionaryIndex', 'columns', 'storeBlocks', 'storeIndex', 'meta'] as const;
export type SectionName = (typeof SECTIONS)[number];

/** Terms per dictionary block (front-coded within a block; the block index holds each block's first term). */
export const DICTIONARY_BLOCK_TERMS = 32;

/** Field bits of a page posting. Page docs carry title, heading, body and meta; anchor docs only anchor text. */
export const FIELD_TITLE = 1;
export const FIELD_HEADING = 2;
export const FIELD_BODY = 4;
/** `site:` and `lang:` terms: matched, never scored, no positions. */
export const FIELD_META = 8;
export const FIELD_BITS = 4;
export const POSITIONED_FIELDS = [FIELD_TITLE, FIELD_HEADING, FIELD_BODY] as const;

/** Positions stored per term and field; a higher frequency is kept, its extra positions are not. */
export const MAX_POSITIONS = 256;

export interface SectionRef {
  readonly offset: number;
  readonly length: number;
  readonly crc: number;
}

export interface Footer {
  readonly sections: Readonly<Record<SectionName, SectionRef>>;
  readonly entries: number;
  readonly pages: number;
  readonly anchors: number;
  readonly terms: number;
}

export function encodeHeader(): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.write(SEGMENT_MAGIC, 0, 'latin1');
  header.writeUInt32LE(SEGMENT_VERSION, 8);
  return header;
}

export function checkHeader(header: Uint8Array, file: string): void {
  const b = Buffer.from(header.buffer, header.byteOffset, header.byteLength);
  if (b.length < HEADER_BYTES || b.toString('latin1', 0, 8) !== SEGMENT_MAGIC) throw new IndexError('INDEX_CORRUPT', `${file}: not a Petrel segment (bad magic)`);
  const version = b.readUInt32LE(8);
  if (version !== SEGMENT_VERSION) throw new IndexError('INDEX_CORRUPT', `${file}: segment version ${version}, expected ${SEGMENT_VERSION}`);
}

export function encodeFooter(footer: Footer): Buffer {
  const b = Buffer.alloc(FOOTER_BYTES);
  b.write(FOOTER_MAGIC, 0, 'latin1');
  b.writeUInt32LE(SEGMENT_VERSION, 8);
  b.writeUInt32LE(SECTIONS.length, 12);
  let at = 16;
  for (const name of SECTIONS) {
    const s = footer.sections[name];
    b.writeUIntLE(s.offset, at, 6);
    b.writeUIntLE(s.length, at + 8, 6);
    b.writeUInt32LE(s.crc, at + 16);
    at += 24;
  }
  b.writeUInt32LE(footer.entries, at);
  b.writeUInt32LE(footer.pages, at + 4);
  b.writeUInt32LE(footer.anchors, at + 8);
  b.writeUInt32LE(footer.terms, at + 12);
  b.writeUInt32LE(crc32c(b, 0, FOOTER_BYTES - 4), FOOTER_BYTES - 4);
  return b;
}

export function decodeFooter(bytes: Uint8Array, fileBytes: number, file: string): Footer {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length !== FOOTER_BYTES || b.toString('latin1', 0, 8) !== FOOTER_MAGIC) throw new IndexError('INDEX_CORRUPT', `${file}: footer missing or torn (bad magic)`);
  if (b.readUInt32LE(FOOTER_BYTES - 4) !== crc32c(b, 0, FOOTER_BYTES - 4)) throw new IndexError('INDEX_CORRUPT', `${file}: footer checksum mismatch`);
  if (b.readUInt32LE(12) !== SECTIONS.length) throw new IndexError('INDEX_CORRUPT', `${file}: footer lists ${b.readUInt32LE(12)} sections`);
  const sections = {} as Record<SectionName, SectionRef>;
  let at = 16;
  let expected = HEADER_BYTES;
  for (const name of SECTIONS) {
    const ref = { offset: b.readUIntLE(at, 6), length: b.readUIntLE(at + 8, 6), crc: b.readUInt32LE(at + 16) };
    if (ref.offset !== expected || ref.offset + ref.length > fileBytes - FOOTER_BYTES) {
      throw new IndexError('INDEX_CORRUPT', `${file}: section ${name} at ${ref.offset}+${ref.length} is out of place`);
    }
    expected = ref.offset + ref.length;
    sections[name] = ref;
    at += 24;
  }
  if (expected !== fileBytes - FOOTER_BYTES) throw new IndexError('INDEX_CORRUPT', `${file}: ${fileBytes - FOOTER_BYTES - expected} bytes between the sections and the footer`);
  return { sections, entries: b.readUInt32LE(at), pages: b.readUInt32LE(at + 4), anchors: b.readUInt32LE(at + 8), terms: b.readUInt32LE(at + 12) };
}

/**
 * Column layout of the columns section: fixed-width little-endian arrays, each starting at a multiple
 * of 4 bytes, in this order. The reader maps typed arrays straight onto them.
 */
export function columnLayout(entries: number, pages: number, anchors: number): { offsets: Record<ColumnName, number>; bytes: number } {
  const offsets = {} as Record<ColumnName, number>;
  let at = 0;
  for (const [name, width, count] of COLUMNS(entries, pages, anchors)) {
    offsets[name] = at;
    at += align4(width * count);
  }
  return { offsets, bytes: at };
}

export type ColumnName =
  | 'entrySourceHi' | 'entrySourceLo' | 'entryPage' | 'entryAnchorFirst' | 'entryAnchorCount' | 'entryAliasHi' | 'entryAliasLo' | 'entryFlags'
  | 'pageEntry' | 'pageTitleLength' | 'pageHeadingLength' | 'pageBodyLength'
  | 'anchorTargetHi' | 'anchorTargetLo' | 'anchorLength';

/** Entry flag bit: the entry is a duplicate whose original is entryAlias. */
export const ENTRY_ALIAS = 1;

function COLUMNS(e: number, p: number, a: number): Array<[ColumnName, number, number]> {
  return [
    ['entrySourceHi', 4, e], ['entrySourceLo', 4, e], ['entryPage', 4, e], ['entryAnchorFirst', 4, e], ['entryAnchorCount', 4, e],
    ['entryAliasHi', 4, e], ['entryAliasLo', 4, e], ['entryFlags', 1, e],
    ['pageEntry', 4, p], ['pageTitleLength', 2, p], ['pageHeadingLength', 2, p], ['pageBodyLength', 2, p],
    ['anchorTargetHi', 4, a], ['anchorTargetLo', 4, a], ['anchorLength', 1, a],
  ];
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

/** The columns of a segment as typed arrays (views onto one buffer when read, own arrays when built). */
export interface Columns {
  readonly entrySourceHi: Uint32Array;
  readonly entrySourceLo: Uint32Array;
  /** Page doc of the entry, or 0xFFFFFFFF when it has none (a duplicate, or anchors only). */
  readonly entryPage: Uint32Array;
  readonly entryAnchorFirst: Uint32Array;
  readonly entryAnchorCount: Uint32Array;
  readonly entryAliasHi: Uint32Array;
  readonly entryAliasLo: Uint32Array;
  readonly entryFlags: Uint8Array;
  readonly pageEntry: Uint32Array;
  readonly pageTitleLength: Uint16Array;
  readonly pageHeadingLength: Uint16Array;
  readonly pageBodyLength: Uint16Array;
  readonly anchorTargetHi: Uint32Array;
  readonly anchorTargetLo: Uint32Array;
  readonly anchorLength: Uint8Array;
}

export const NO_PAGE = 0xffffffff;

export function columnsOnto(buffer: ArrayBuffer, base: number, entries: number, pages: number, anchors: number): Columns {
  const { offsets } = columnLayout(entries, pages, anchors);
  const u32 = (name: ColumnName, n: number) => new Uint32Array(buffer, base + offsets[name], n);
  const u16 = (name: ColumnName, n: number) => new Uint16Array(buffer, base + offsets[name], n);
  const u8 = (name: ColumnName, n: number) => new Uint8Array(buffer, base + offsets[name], n);
  return {
    entrySourceHi: u32('entrySourceHi', entries), entrySourceLo: u32('entrySourceLo', entries), entryPage: u32('entryPage', entries),
    entryAnchorFirst: u32('entryAnchorFirst', entries), entryAnchorCount: u32('entryAnchorCount', entries),
    entryAliasHi: u32('entryAliasHi', entries), entryAliasLo: u32('entryAliasLo', entries), entryFlags: u8('entryFlags', entries),
    pageEntry: u32('pageEntry', pages), pageTitleLength: u16('pageTitleLength', pages), pageHeadingLength: u16('pageHeadingLength', pages),
    pageBodyLength: u16('pageBodyLength', pages),
    anchorTargetHi: u32('anchorTargetHi', anchors), anchorTargetLo: u32('anchorTargetLo', anchors), anchorLength: u8('anchorLength', anchors),
  };
}

/** The columns as one little-endian byte string (the columns section). */
export function encodeColumns(columns: Columns, entries: number, pages: number, anchors: number): Uint8Array {
  const { bytes } = columnLayout(entries, pages, anchors);
  const buffer = new ArrayBuffer(bytes);
  const target = columnsOnto(buffer, 0, entries, pages, anchors);
  for (const name of Object.keys(target) as ColumnName[]) {
    (target[name] as Uint8Array).set((columns[name] as Uint8Array).subarray(0, target[name].length));
  }
  return new Uint8Array(buffer);
}
