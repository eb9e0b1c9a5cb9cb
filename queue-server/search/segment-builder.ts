/**
 * The staging buffer: entries staged since the last flush, inverted in memory, written out as one
 * segment by `content()` + writeSegment. Not searchable itself: a commit flushes it (search sees
 * exactly the last commit).
 *
 * An ENTRY is what one URL contributed: its page doc (title, heading, body and meta terms, plus its
 * stored document), the anchor docs of its outlinks (one per target URL), and, for a duplicate, the
 * URL of its original. Entries are the unit of replacement: re-staging a URL deletes its previous
 * entry whole, wherever it is.
 *
 * Postings are kept per term in one growable byte buffer per kind, records interleaved:
 *   page:   varint(docDelta * 16 + fieldMask), varint(freq) per positioned field in the mask,
 *           then per positioned field min(freq, 256) position deltas
 *   anchor: varint(docDelta), varint(freq), min(freq, 256) position deltas
 * and split into the file's separate doc and position streams when the segment is written. Doc ids
 * only grow, so deltas are >= 1 (the first is doc + 1).
 *
 * Memory: `bytes` estimates what the buffer holds (posting bytes allocated, about 160 bytes per
 * distinct term, compressed stored documents, the columns); the index flushes it at its bound.
 */
import { deflateRawSync } from 'node:zlib';
import type { IndexData } from '../../shared/index-data.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { IndexError } from './errors.js';
import {
  ENTRY_ALIAS,
  FIELD_BODY,
  FIELD_HEADING,
  FIELD_META,
  FIELD_TITLE,
  MAX_POSITIONS,
  NO_PAGE,
  STORE_BLOCK_BYTES,
  STORE_ZLIB_LEVEL,
  type Columns,
} from './segment-format.js';
import type { SegmentContent, StoreBlock, TermPostings } from './segment-writer.js';

export interface StagedPage {
  readonly url: string;
  /** When the page was fetched, ms since epoch. */
  readonly fetchedAt: number;
  readonly data: IndexData;
  /** `site:` and `lang:` terms (search/meta-terms.ts). */
  readonly metaTerms: readonly string[];
}

export interface StagedAnchor {
  readonly targetHi: number;
  readonly targetLo: number;
  readonly terms: readonly string[];
}

interface TermBuffer {
  page: ByteWriter | null;
  lastPage: number;
  pageDf: number;
  anchor: ByteWriter | null;
  lastAnchor: number;
  anchorDf: number;
}

const PER_TERM_BYTES = 160;
const POSITIONED: ReadonlyArray<readonly [number, 'title' | 'heading' | 'body']> = [
  [FIELD_TITLE, 'title'],
  [FIELD_HEADING, 'heading'],
  [FIELD_BODY, 'body'],
];

class Growable32 {
  array = new Uint32Array(64);
  push(index: number, value: number): void {
    if (index >= this.array.length) {
      const grown = new Uint32Array(this.array.length * 2);
      grown.set(this.array);
      this.array = grown;
    }
    this.array[index] = value;
  }
}
class Growable16 {
  array = new Uint16Array(64);
  push(index: number, value: number): void {
    if (index >= this.array.length) {
      const grown = new Uint16Array(this.array.length * 2);
      grown.set(this.array);
      this.array = grown;
    }
    this.array[index] = value;
  }
}
class Growable8 {
  array = new Uint8Array(64);
  push(index: number, value: number): void {
    if (index >= this.array.length) {
      const grown = new Uint8Array(this.array.length * 2);
      grown.set(this.array);
      this.array = grown;
    }
    this.array[index] = value;
  }
}

export class SegmentBuilder {
  readonly #terms = new Map<string, TermBuffer>();
  readonly #stemmers = new Set<string>();
  #entries = 0;
  #pages = 0;
  #anchors = 0;
  #postingBytes = 0;
  readonly #deleted: number[] = [];

  readonly #entrySourceHi = new Growable32();
  readonly #entrySourceLo = new Growable32();
  readonly #entryPage = new Growable32();
  readonly #entryAnchorFirst = new Growable32();
  readonly #entryAnchorCount = new Growable32();
  readonly #entryAliasHi = new Growable32();
  readonly #entryAliasLo = new Growable32();
  readonly #entryFlags = new Growable8();
  readonly #pageEntry = new Growable32();
  readonly #pageTitle = new Growable16();
  readonly #pageHeading = new Growable16();
  readonly #pageBody = new Growable16();
  readonly #anchorTargetHi = new Growable32();
  readonly #anchorTargetLo = new Growable32();
  readonly #anchorLength = new Growable8();

  readonly #storeBlocks: StoreBlock[] = [];
  #storeBytes = 0;
  readonly #record = new ByteWriter(1024);
  #recordCount = 0;

  get entries(): number {
    return this.#entries;
  }

  get pages(): number {
    return this.#pages;
  }

  get anchors(): number {
    return this.#anchors;
  }

  /** Estimated bytes held. */
  get bytes(): number {
    return this.#postingBytes + this.#terms.size * PER_TERM_BYTES + this.#storeBytes + this.#record.capacity + (this.#entries * 29 + this.#pages * 10 + this.#anchors * 9) * 2;
  }

  /** Entries staged here and then replaced before the flush: written as the segment's first deletions. */
  get deletedEntries(): readonly number[] {
    return this.#deleted;
  }

  deleteEntry(entry: number): void {
    this.#deleted.push(entry);
  }

  /** Adds one URL's entry; returns its entry number in this segment. */
  addEntry(sourceHi: number, sourceLo: number, page: StagedPage | null, anchors: readonly StagedAnchor[], alias: readonly [number, number] | null): number {
    const entry = this.#entries++;
    this.#entrySourceHi.push(entry, sourceHi);
    this.#entrySourceLo.push(entry, sourceLo);
    this.#entryPage.push(entry, page === null ? NO_PAGE : this.#pages);
    this.#entryAnchorFirst.push(entry, this.#anchors);
    this.#entryAnchorCount.push(entry, anchors.length);
    this.#entryAliasHi.push(entry, alias === null ? 0 : alias[0]);
    this.#entryAliasLo.push(entry, alias === null ? 0 : alias[1]);
    this.#entryFlags.push(entry, alias === null ? 0 : ENTRY_ALIAS);
    if (page !== null) this.#addPage(entry, page);
    for (const anchor of anchors) this.#addAnchor(anchor);
    return entry;
  }

  #term(term: string): TermBuffer {
    let buffer = this.#terms.get(term);
    if (buffer === undefined) {
      buffer = { page: null, lastPage: -1, pageDf: 0, anchor: null, lastAnchor: -1, anchorDf: 0 };
      this.#terms.set(term, buffer);
    }
    return buffer;
  }

  #addPage(entry: number, page: StagedPage): void {
    const doc = this.#pages++;
    const { data } = page;
    this.#stemmers.add(data.stemmer);
    const lengths = { title: 0, heading: 0, body: 0 };
    // One posting per (term, doc): gather the term's fields first.
    const byTerm = new Map<string, { mask: number; fields: Array<readonly [number, readonly number[]] | null> }>();
    for (let f = 0; f < POSITIONED.length; f++) {
      const [bit, name] = POSITIONED[f]!;
      for (const [term, frequency, deltas] of data.fields[name]) {
        lengths[name] += frequency;
        let gathered = byTerm.get(term);
        if (gathered === undefined) {
          gathered = { mask: 0, fields: [null, null, null] };
          byTerm.set(term, gathered);
        }
        if ((gathered.mask & bit) !== 0) throw new IndexError('INDEX_BAD_DATA', `${page.url}: term ${JSON.stringify(term)} listed twice in ${name}`);
        if (deltas.length !== Math.min(frequency, MAX_POSITIONS)) throw new IndexError('INDEX_BAD_DATA', `${page.url}: term ${JSON.stringify(term)} in ${name} has ${deltas.length} positions for frequency ${frequency}`);
        for (let k = 1; k < deltas.length; k++) {
          if (deltas[k]! < 1) throw new IndexError('INDEX_BAD_DATA', `${page.url}: positions of ${JSON.stringify(term)} in ${name} do not increase`);
        }
        gathered.mask |= bit;
        gathered.fields[f] = [frequency, deltas];
      }
    }
    for (const term of page.metaTerms) {
      let gathered = byTerm.get(term);
      if (gathered === undefined) {
        gathered = { mask: 0, fields: [null, null, null] };
        byTerm.set(term, gathered);
      }
      gathered.mask |= FIELD_META;
    }
    for (const [term, gathered] of byTerm) {
      const buffer = this.#term(term);
      let out = buffer.page;
      if (out === null) {
        out = buffer.page = new ByteWriter(8);
        this.#postingBytes += out.capacity;
      }
      const before = out.capacity;
      out.varint((doc - buffer.lastPage) * 16 + gathered.mask);
      for (const field of gathered.fields) if (field !== null) out.varint(field[0]);
      for (const field of gathered.fields) if (field !== null) for (const d of field[1]) out.varint(d);
      this.#postingBytes += out.capacity - before;
      buffer.lastPage = doc;
      buffer.pageDf++;
    }
    this.#pageEntry.push(doc, entry);
    this.#pageTitle.push(doc, Math.min(lengths.title, 0xffff));
    this.#pageHeading.push(doc, Math.min(lengths.heading, 0xffff));
    this.#pageBody.push(doc, Math.min(lengths.body, 0xffff));
    this.#storeRecord(page);
  }

  #addAnchor(anchor: StagedAnchor): void {
    const doc = this.#anchors++;
    this.#anchorTargetHi.push(doc, anchor.targetHi);
    this.#anchorTargetLo.push(doc, anchor.targetLo);
    this.#anchorLength.push(doc, Math.min(anchor.terms.length, 0xff));
    const positions = new Map<string, number[]>();
    for (let i = 0; i < anchor.terms.length; i++) {
      const term = anchor.terms[i]!;
      const list = positions.get(term);
      if (list === undefined) positions.set(term, [i]);
      else list.push(i);
    }
    for (const [term, list] of positions) {
      const buffer = this.#term(term);
      let out = buffer.anchor;
      if (out === null) {
        out = buffer.anchor = new ByteWriter(8);
        this.#postingBytes += out.capacity;
      }
      const before = out.capacity;
      out.varint(doc - buffer.lastAnchor);
      out.varint(list.length);
      const kept = Math.min(list.length, MAX_POSITIONS);
      for (let k = 0; k < kept; k++) out.varint(k === 0 ? list[0]! : list[k]! - list[k - 1]!);
      this.#postingBytes += out.capacity - before;
      buffer.lastAnchor = doc;
      buffer.anchorDf++;
    }
  }

  #storeRecord(page: StagedPage): void {
    encodeStoredDocument(this.#record, { url: page.url, title: page.data.title ?? '', text: page.data.text, language: page.data.language ?? '', fetchedAt: page.fetchedAt });
    this.#recordCount++;
    if (this.#record.length >= STORE_BLOCK_BYTES) this.#sealBlock();
  }

  #sealBlock(): void {
    if (this.#recordCount === 0) return;
    const compressed = deflateRawSync(this.#record.view(), { level: STORE_ZLIB_LEVEL });
    this.#storeBlocks.push({ compressed, records: this.#recordCount });
    this.#storeBytes += compressed.length;
    this.#record.reset();
    this.#recordCount = 0;
  }

  /** The segment to write. Consumes the builder: call once. */
  content(): SegmentContent {
    this.#sealBlock();
    const terms = [...this.#terms.keys()].sort();
    const map = this.#terms;
    const columns: Columns = {
      entrySourceHi: this.#entrySourceHi.array, entrySourceLo: this.#entrySourceLo.array, entryPage: this.#entryPage.array,
      entryAnchorFirst: this.#entryAnchorFirst.array, entryAnchorCount: this.#entryAnchorCount.array,
      entryAliasHi: this.#entryAliasHi.array, entryAliasLo: this.#entryAliasLo.array, entryFlags: this.#entryFlags.array,
      pageEntry: this.#pageEntry.array, pageTitleLength: this.#pageTitle.array, pageHeadingLength: this.#pageHeading.array,
      pageBodyLength: this.#pageBody.array,
      anchorTargetHi: this.#anchorTargetHi.array, anchorTargetLo: this.#anchorTargetLo.array, anchorLength: this.#anchorLength.array,
    };
    return {
      entries: this.#entries,
      pages: this.#pages,
      anchors: this.#anchors,
      columns,
      stemmers: [...this.#stemmers],
      storeBlocks: this.#storeBlocks,
      terms: (function* (): Generator<TermPostings> {
        for (const term of terms) {
          const buffer = map.get(term)!;
          const page = buffer.page === null ? EMPTY_SPLIT : splitPagePostings(buffer.page.view(), buffer.pageDf);
          const anchor = buffer.anchor === null ? EMPTY_SPLIT : splitAnchorPostings(buffer.anchor.view(), buffer.anchorDf);
          yield { term, pageDf: buffer.pageDf, pageDocs: page.docs, pagePositions: page.positions, anchorDf: buffer.anchorDf, anchorDocs: anchor.docs, anchorPositions: anchor.positions };
        }
      })(),
    };
  }
}

const EMPTY_SPLIT = { docs: new Uint8Array(0), positions: new Uint8Array(0) };

function splitPagePostings(interleaved: Uint8Array, df: number): { docs: Uint8Array; positions: Uint8Array } {
  const reader = new ByteReader(interleaved);
  const docs = new ByteWriter(interleaved.length);
  const positions = new ByteWriter(interleaved.length);
  const freqs = [0, 0, 0];
  for (let i = 0; i < df; i++) {
    const head = reader.varint();
    docs.varint(head);
    const mask = head % 16;
    let n = 0;
    for (const [bit] of POSITIONED) {
      if ((mask & bit) === 0) continue;
      const f = reader.varint();
      docs.varint(f);
      freqs[n++] = f;
    }
    for (let k = 0; k < n; k++) {
      const kept = Math.min(freqs[k]!, MAX_POSITIONS);
      for (let p = 0; p < kept; p++) positions.varint(reader.varint());
    }
  }
  return { docs: docs.toBytes(), positions: positions.toBytes() };
}

function splitAnchorPostings(interleaved: Uint8Array, df: number): { docs: Uint8Array; positions: Uint8Array } {
  const reader = new ByteReader(interleaved);
  const docs = new ByteWriter(interleaved.length);
  const positions = new ByteWriter(interleaved.length);
  for (let i = 0; i < df; i++) {
    docs.varint(reader.varint());
    const f = reader.varint();
    docs.varint(f);
    const kept = Math.min(f, MAX_POSITIONS);
    for (let p = 0; p < kept; p++) positions.varint(reader.varint());
  }
  return { docs: docs.toBytes(), positions: positions.toBytes() };
}

export interface StoredDocument {
  readonly url: string;
  /** Empty when the page had no title. */
  readonly title: string;
  readonly text: string;
  /** Empty when unknown. */
  readonly language: string;
  /** ms since epoch. */
  readonly fetchedAt: number;
}

/** A stored document record: url, title, text, language as length-prefixed UTF-8, then fetchedAt. */
export function encodeStoredDocument(out: ByteWriter, doc: StoredDocument): void {
  out.string(doc.url);
  out.string(doc.title);
  out.string(doc.text);
  out.string(doc.language);
  out.varint(Math.max(0, Math.floor(doc.fetchedAt)));
}

export function decodeStoredDocument(reader: ByteReader): StoredDocument {
  return { url: reader.string(), title: reader.string(), text: reader.string(), language: reader.string(), fetchedAt: reader.varint() };
}
