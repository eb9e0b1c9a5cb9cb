/**
 * The staging buffer: entries staged since the last flush, inverted in memory, written out as one
 * segment by `content()` + writeSegmentAt (into the commit log). Not searchable itself: a commit
 * appends it to the log (search sees exactly the last commit).
 *
 * An ENTRY is what one URL contributed: its page doc (title, heading, body and meta terms, plus its
 * stored document), the anchor docs of its outlinks (one per target URL), and, for a duplicate, the
 * URL of its original. Entries are the unit of replacement: re-staging a URL deletes its previous
 * entry whole, wherever it is.
 *
 * Postings are kept per term already in the file's format (LAYOUT.md), in streams of the posting pool
 * (posting-pool.ts): a doc stream and a position stream for page postings, the same two for anchor
 * postings (created when first needed); a term is a number indexing typed arrays. Doc ids only grow,
 * so deltas are >= 1 (the first is doc + 1).
 *
 * Memory: `bytes` estimates what the buffer holds (posting bytes in the pool, about 120 bytes per
 * distinct term, the stored documents (raw), the columns); the index flushes it at its bound.
 */
import type { IndexData } from '../../shared/index-data.js';
import { ByteWriter } from './bytes.js';
import { PostingPool } from './posting-pool.js';
import { BlockSink, encodeHead, HEAD_BLOCK_BYTES, TEXT_BLOCK_BYTES } from './doc-store.js';
import { IndexError } from './errors.js';
import { sortedTermIds } from './term-sort.js';
import {
  ENTRY_ALIAS,
  FIELD_BODY,
  FIELD_HEADING,
  FIELD_META,
  FIELD_TITLE,
  MAX_POSITIONS,
  NO_PAGE,
  type Columns,
} from './segment-format.js';
import type { SegmentContent, TermPostings } from './segment-writer.js';

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

/** Estimated bytes per distinct term beyond its postings: the map entry and the per-term integers. */
const PER_TERM_BYTES = 120;

/** A term of a page's title or headings, gathered to be written with the body's in one posting. */
interface SmallTerm {
  mask: number;
  readonly frequencies: [number, number, number];
  readonly deltas: [readonly number[] | null, readonly number[] | null, readonly number[] | null];
}
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

function grownInt32(array: Int32Array<ArrayBuffer>, need: number, fill: number): Int32Array<ArrayBuffer> {
  if (need <= array.length) return array;
  let size = array.length * 2;
  while (size < need) size *= 2;
  const out = new Int32Array(size).fill(fill);
  out.set(array);
  return out;
}

export class SegmentBuilder {
  /** term -> term id; per term id its four streams in the pool (-1: none yet) and counters. */
  readonly #terms = new Map<string, number>();
  readonly #termList: string[] = [];
  readonly #pool: PostingPool;
  #pageDocs = new Int32Array(1024).fill(-1);
  #pagePositions = new Int32Array(1024).fill(-1);
  #anchorDocs = new Int32Array(1024).fill(-1);
  #anchorPositions = new Int32Array(1024).fill(-1);
  #lastPage = new Int32Array(1024).fill(-1);
  #pageDf = new Int32Array(1024);
  /** Stamp of the last page that listed the term (duplicate detection). */
  #mark = new Int32Array(1024).fill(-1);
  #lastAnchor = new Int32Array(1024).fill(-1);
  #anchorDf = new Int32Array(1024);

  /** `pool`: blocks to reuse (the index passes one pool to each builder in turn); reset here. */
  constructor(pool: PostingPool = new PostingPool()) {
    this.#pool = pool;
    pool.reset();
  }
  readonly #stemmers = new Set<string>();
  #entries = 0;
  #pages = 0;
  #anchors = 0;

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

  /** Stored documents, raw: compressing is left to merges, off the event loop (doc-store.ts). */
  readonly #heads = new BlockSink(HEAD_BLOCK_BYTES, false);
  readonly #texts = new BlockSink(TEXT_BLOCK_BYTES, false);

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
    return this.#pool.usedBytes + this.#terms.size * PER_TERM_BYTES + this.#heads.bytes + this.#texts.bytes + (this.#entries * 29 + this.#pages * 10 + this.#anchors * 9) * 2;
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

  #term(term: string): number {
    let id = this.#terms.get(term);
    if (id === undefined) {
      id = this.#termList.length;
      this.#termList.push(term);
      this.#terms.set(term, id);
      const n = id + 1;
      if (n > this.#lastPage.length) {
        this.#pageDocs = grownInt32(this.#pageDocs, n, -1);
        this.#pagePositions = grownInt32(this.#pagePositions, n, -1);
        this.#anchorDocs = grownInt32(this.#anchorDocs, n, -1);
        this.#anchorPositions = grownInt32(this.#anchorPositions, n, -1);
        this.#lastPage = grownInt32(this.#lastPage, n, -1);
        this.#pageDf = grownInt32(this.#pageDf, n, 0);
        this.#mark = grownInt32(this.#mark, n, -1);
        this.#lastAnchor = grownInt32(this.#lastAnchor, n, -1);
        this.#anchorDf = grownInt32(this.#anchorDf, n, 0);
      }
    }
    return id;
  }

  #marks = 0;

  #addPage(entry: number, page: StagedPage): void {
    const { data } = page;
    const bad = (message: string): never => {
      throw new IndexError('INDEX_BAD_DATA', `${page.url}: ${message}`);
    };
    const checkPositions = (term: string, field: string, frequency: number, deltas: readonly number[]): void => {
      if (deltas.length !== Math.min(frequency, MAX_POSITIONS) || frequency < 1) bad(`term ${JSON.stringify(term)} in ${field} has ${deltas.length} positions for frequency ${frequency}`);
      for (let k = 1; k < deltas.length; k++) if (!(deltas[k]! >= 1)) bad(`positions of ${JSON.stringify(term)} in ${field} do not increase`);
    };
    // Everything is checked before anything is written, so a refused page leaves the buffer as it was.
    const mark = ++this.#marks;
    const lengths = { title: 0, heading: 0, body: 0 };
    const small = new Map<string, SmallTerm>();
    for (let f = 0; f < 2; f++) {
      const [bit, name] = POSITIONED[f]!;
      for (const [term, frequency, deltas] of data.fields[name]) {
        checkPositions(term, name, frequency, deltas);
        lengths[name] += frequency;
        let gathered = small.get(term);
        if (gathered === undefined) {
          gathered = { mask: 0, frequencies: [0, 0, 0], deltas: [null, null, null] };
          small.set(term, gathered);
        }
        if ((gathered.mask & bit) !== 0) bad(`term ${JSON.stringify(term)} listed twice in ${name}`);
        gathered.mask |= bit;
        gathered.frequencies[f] = frequency;
        gathered.deltas[f] = deltas;
      }
    }
    const body = data.fields.body;
    const bodyTerms = new Int32Array(body.length).fill(-1);
    for (let i = 0; i < body.length; i++) {
      const [term, frequency, deltas] = body[i]!;
      checkPositions(term, 'body', frequency, deltas);
      lengths.body += frequency;
      const gathered = small.get(term);
      if (gathered !== undefined) {
        if ((gathered.mask & FIELD_BODY) !== 0) bad(`term ${JSON.stringify(term)} listed twice in body`);
        gathered.mask |= FIELD_BODY;
        gathered.frequencies[2] = frequency;
        gathered.deltas[2] = deltas;
        continue;
      }
      const id = this.#term(term);
      if (this.#mark[id] === mark) bad(`term ${JSON.stringify(term)} listed twice in body`);
      this.#mark[id] = mark;
      bodyTerms[i] = id;
    }

    const doc = this.#pages++;
    this.#stemmers.add(data.stemmer);
    for (let i = 0; i < body.length; i++) {
      const id = bodyTerms[i]!;
      if (id < 0) continue;
      const entry = body[i]!;
      this.#writePagePosting(id, doc, FIELD_BODY, entry[1], 0, 0, null, null, entry[2]);
    }
    for (const [term, g] of small) {
      this.#writePagePosting(this.#term(term), doc, g.mask, g.frequencies[0], g.frequencies[1], g.frequencies[2], g.deltas[0], g.deltas[1], g.deltas[2]);
    }
    for (const term of page.metaTerms) {
      const id = this.#term(term);
      if (this.#lastPage[id] === doc) continue;
      this.#writePagePosting(id, doc, FIELD_META, 0, 0, 0, null, null, null);
    }
    this.#pageEntry.push(doc, entry);
    this.#pageTitle.push(doc, Math.min(lengths.title, 0xffff));
    this.#pageHeading.push(doc, Math.min(lengths.heading, 0xffff));
    this.#pageBody.push(doc, Math.min(lengths.body, 0xffff));
    this.#storeRecord(page);
  }

  /**
   * One page posting: varint(docDelta * 16 + mask), the frequencies of the positioned fields in the
   * mask, then (position stream) their positions. For a body-only posting pass the body frequency as
   * `ft` and its deltas as `db` (the one positioned field present).
   */
  #writePagePosting(id: number, doc: number, mask: number, ft: number, fh: number, fb: number, dt: readonly number[] | null, dh: readonly number[] | null, db: readonly number[] | null): void {
    const pool = this.#pool;
    let docs = this.#pageDocs[id]!;
    let positions = this.#pagePositions[id]!;
    if (docs < 0) {
      docs = this.#pageDocs[id] = pool.newStream();
      positions = this.#pagePositions[id] = pool.newStream();
    }
    pool.varint(docs, (doc - this.#lastPage[id]!) * 16 + mask);
    if (mask === FIELD_BODY) {
      pool.varint(docs, ft);
      for (const d of db!) pool.varint(positions, d);
    } else {
      if (mask & FIELD_TITLE) pool.varint(docs, ft);
      if (mask & FIELD_HEADING) pool.varint(docs, fh);
      if (mask & FIELD_BODY) pool.varint(docs, fb);
      if (dt !== null) for (const d of dt) pool.varint(positions, d);
      if (dh !== null) for (const d of dh) pool.varint(positions, d);
      if (db !== null) for (const d of db) pool.varint(positions, d);
    }
    this.#lastPage[id] = doc;
    this.#pageDf[id]!++;
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
    const pool = this.#pool;
    for (const [term, list] of positions) {
      const id = this.#term(term);
      let docs = this.#anchorDocs[id]!;
      let out = this.#anchorPositions[id]!;
      if (docs < 0) {
        docs = this.#anchorDocs[id] = pool.newStream();
        out = this.#anchorPositions[id] = pool.newStream();
      }
      pool.varint(docs, doc - this.#lastAnchor[id]!);
      pool.varint(docs, list.length);
      const kept = Math.min(list.length, MAX_POSITIONS);
      for (let k = 0; k < kept; k++) pool.varint(out, k === 0 ? list[0]! : list[k]! - list[k - 1]!);
      this.#lastAnchor[id] = doc;
      this.#anchorDf[id]!++;
    }
  }

  #storeRecord(page: StagedPage): void {
    encodeHead(this.#heads.current, { url: page.url, title: page.data.title ?? '', language: page.data.language ?? '', fetchedAt: page.fetchedAt });
    this.#heads.recordDone();
    this.#texts.current.string(page.data.text);
    this.#texts.recordDone();
  }

  /** The segment to write. Consumes the builder: call once. */
  content(): SegmentContent {
    this.#heads.seal();
    this.#texts.seal();
    const order = sortedTermIds(this.#termList);
    const termList = this.#termList;
    const pool = this.#pool;
    const streams = { pageDocs: this.#pageDocs, pagePositions: this.#pagePositions, anchorDocs: this.#anchorDocs, anchorPositions: this.#anchorPositions };
    const pageDf = this.#pageDf;
    const anchorDf = this.#anchorDf;
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
      headBlocks: this.#heads.blocks,
      textBlocks: this.#texts.blocks,
      terms: (function* (): Generator<TermPostings> {
        // Four writers and one result object reused term after term (the segment writer copies each
        // before asking for the next), the four streams copied without a loop over their names: the
        // generic version was 2.9 s of 100 commits of the benchmark (profiled).
        const pageDocsOut = new ByteWriter(1 << 12);
        const pagePositionsOut = new ByteWriter(1 << 12);
        const anchorDocsOut = new ByteWriter(1 << 10);
        const anchorPositionsOut = new ByteWriter(1 << 10);
        const t = { term: '', pageDf: 0, anchorDf: 0, pageDocs: pageDocsOut, pagePositions: pagePositionsOut, anchorDocs: anchorDocsOut, anchorPositions: anchorPositionsOut };
        for (const id of order) {
          pageDocsOut.reset();
          pagePositionsOut.reset();
          anchorDocsOut.reset();
          anchorPositionsOut.reset();
          const pd = streams.pageDocs[id]!;
          if (pd >= 0) {
            pool.copyTo(pd, pageDocsOut);
            pool.copyTo(streams.pagePositions[id]!, pagePositionsOut);
          }
          const ad = streams.anchorDocs[id]!;
          if (ad >= 0) {
            pool.copyTo(ad, anchorDocsOut);
            pool.copyTo(streams.anchorPositions[id]!, anchorPositionsOut);
          }
          t.term = termList[id]!;
          t.pageDf = pageDf[id]!;
          t.anchorDf = anchorDf[id]!;
          yield t;
        }
      })(),
    };
  }
}

