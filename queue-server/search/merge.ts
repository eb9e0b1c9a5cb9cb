/**
 * Merges segments into one, dropping deleted entries (tombstones are applied here and only here). Runs
 * in the merge worker thread (merge-worker.ts), off the queue server's event loop; it only reads the
 * input files, which are immutable, and writes a new file no manifest names yet. Installing the result
 * (carrying over deletions that happened meanwhile, the manifest switch) is the index's job, on the
 * main thread (search-index.ts `#installMerge`).
 *
 * Output order: the inputs' live entries in input order, each keeping its docs in order, so every doc
 * id maps to a new one by a monotonic function and each posting list is re-encoded in one pass (doc
 * deltas recomputed, frequencies and position bytes copied). Store blocks without a deleted page are
 * copied compressed, others are re-packed.
 *
 * Memory: one term's postings from every input at a time, the output's columns and dictionary, the
 * remap tables (4 bytes per input doc).
 */
import { join } from 'node:path';
import { ByteReader, ByteWriter } from './bytes.js';
import { IndexError } from './errors.js';
import { blockRecords, CODEC_DEFLATE, decodeHead, encodeBlock, encodeHead, type StoreBlock } from './doc-store.js';
import { MAX_POSITIONS, NO_PAGE, POSITIONED_FIELDS, type Columns } from './segment-format.js';
import { postingsAt, postingsSpan, SegmentReader, type StoreKind, type TermInfo } from './segment-reader.js';
import { writeSegment, type TermPostings } from './segment-writer.js';

export interface MergeInput {
  readonly id: number;
  readonly file: string;
  /** Where the segment is in `file` when that is a commit log (its record's payload); absent: the whole file. */
  readonly range?: { readonly offset: number; readonly length: number };
  /** Entries deleted when the merge was planned (ascending; a typed array: no JS heap in the worker). */
  readonly deleted: ArrayLike<number>;
}

export interface MergeJob {
  readonly dir: string;
  readonly inputs: readonly MergeInput[];
  readonly outputId: number;
  readonly outputFile: string;
}

export interface MergeResult {
  readonly outputId: number;
  readonly outputFile: string;
  readonly entries: number;
  readonly pages: number;
  readonly anchors: number;
  readonly bytes: number;
  readonly terms: number;
}

interface Input {
  readonly reader: SegmentReader;
  readonly deletedEntry: Uint8Array;
  readonly pageMap: Int32Array;
  readonly anchorMap: Int32Array;
  readonly pagesDropped: number;
  readonly anchorsDropped: number;
}

export function mergeSegments(job: MergeJob): MergeResult {
  const inputs: Input[] = [];
  try {
    let entries = 0;
    let pages = 0;
    let anchors = 0;
    for (const spec of job.inputs) {
      const reader = SegmentReader.open(join(job.dir, spec.file), spec.range);
      for (const section of ['postings', 'dictionary', 'storeBlocks'] as const) {
        if (!reader.verifySection(section)) {
          reader.close();
          throw new IndexError('INDEX_CORRUPT', `${spec.file}: section ${section} checksum mismatch; not merged`);
        }
      }
      const { footer, columns } = reader;
      const deletedEntry = new Uint8Array(footer.entries);
      for (let k = 0; k < spec.deleted.length; k++) deletedEntry[spec.deleted[k]!] = 1;
      const pageMap = new Int32Array(footer.pages).fill(-1);
      const anchorMap = new Int32Array(footer.anchors).fill(-1);
      let pagesDropped = 0;
      let anchorsDropped = 0;
      for (let e = 0; e < footer.entries; e++) {
        const page = columns.entryPage[e]!;
        const first = columns.entryAnchorFirst[e]!;
        const count = columns.entryAnchorCount[e]!;
        if (deletedEntry[e] === 1) {
          if (page !== NO_PAGE) pagesDropped++;
          anchorsDropped += count;
          continue;
        }
        entries++;
        if (page !== NO_PAGE) pageMap[page] = pages++;
        for (let a = first; a < first + count; a++) anchorMap[a] = anchors++;
      }
      inputs.push({ reader, deletedEntry, pageMap, anchorMap, pagesDropped, anchorsDropped });
    }

    const columns = mergeColumns(inputs, entries, pages, anchors);
    const stemmers = [...new Set(inputs.flatMap((i) => i.reader.meta.stemmers))];
    const written = writeSegment(join(job.dir, job.outputFile), {
      entries,
      pages,
      anchors,
      columns,
      stemmers,
      terms: mergedTerms(inputs),
      headBlocks: mergedStore(inputs, 'head'),
      textBlocks: mergedStore(inputs, 'text'),
    });
    return { outputId: job.outputId, outputFile: job.outputFile, entries, pages, anchors, bytes: written.bytes, terms: written.terms };
  } finally {
    for (const input of inputs) input.reader.close();
  }
}

function mergeColumns(inputs: readonly Input[], entries: number, pages: number, anchors: number): Columns {
  const out: Columns = {
    entrySourceHi: new Uint32Array(entries), entrySourceLo: new Uint32Array(entries), entryPage: new Uint32Array(entries),
    entryAnchorFirst: new Uint32Array(entries), entryAnchorCount: new Uint32Array(entries),
    entryAliasHi: new Uint32Array(entries), entryAliasLo: new Uint32Array(entries), entryFlags: new Uint8Array(entries),
    pageEntry: new Uint32Array(pages), pageTitleLength: new Uint16Array(pages), pageHeadingLength: new Uint16Array(pages), pageBodyLength: new Uint16Array(pages),
    anchorTargetHi: new Uint32Array(anchors), anchorTargetLo: new Uint32Array(anchors), anchorLength: new Uint8Array(anchors),
  };
  let e2 = 0;
  let anchorsSoFar = 0;
  for (let i = 0; i < inputs.length; i++) {
    const { reader, pageMap, anchorMap } = inputs[i]!;
    const c = reader.columns;
    const deleted = inputs[i]!.deletedEntry;
    for (let e = 0; e < reader.footer.entries; e++) {
      if (deleted[e] === 1) continue;
      out.entrySourceHi[e2] = c.entrySourceHi[e]!;
      out.entrySourceLo[e2] = c.entrySourceLo[e]!;
      out.entryAliasHi[e2] = c.entryAliasHi[e]!;
      out.entryAliasLo[e2] = c.entryAliasLo[e]!;
      out.entryFlags[e2] = c.entryFlags[e]!;
      const page = c.entryPage[e]!;
      if (page === NO_PAGE) out.entryPage[e2] = NO_PAGE;
      else {
        const p2 = pageMap[page]!;
        out.entryPage[e2] = p2;
        out.pageEntry[p2] = e2;
        out.pageTitleLength[p2] = c.pageTitleLength[page]!;
        out.pageHeadingLength[p2] = c.pageHeadingLength[page]!;
        out.pageBodyLength[p2] = c.pageBodyLength[page]!;
      }
      const first = c.entryAnchorFirst[e]!;
      const count = c.entryAnchorCount[e]!;
      // Live entries keep their anchors in entry order, so each range starts where the previous ended.
      out.entryAnchorFirst[e2] = anchorsSoFar;
      out.entryAnchorCount[e2] = count;
      anchorsSoFar += count;
      for (let a = first; a < first + count; a++) {
        const a2 = anchorMap[a]!;
        out.anchorTargetHi[a2] = c.anchorTargetHi[a]!;
        out.anchorTargetLo[a2] = c.anchorTargetLo[a]!;
        out.anchorLength[a2] = c.anchorLength[a]!;
      }
      e2++;
    }
  }
  return out;
}

/**
 * A term's postings from a window of the postings section read 1 MiB at a time: the merge reads the
 * terms in file order, so one read serves thousands of terms (a positioned read per term and input
 * was 40 % of the merge worker's time, profiled on the benchmark).
 */
class PostingsWindow {
  static readonly BYTES = 1 << 20;
  readonly #reader: SegmentReader;
  readonly #sectionEnd: number;
  #start = 0;
  #bytes: Uint8Array = new Uint8Array(0);

  constructor(reader: SegmentReader) {
    this.#reader = reader;
    const section = reader.footer.sections.postings;
    this.#sectionEnd = section.offset + section.length;
    this.#start = section.offset;
  }

  postings(info: TermInfo): TermPostings<Uint8Array> {
    const { first, length: total } = postingsSpan(info);
    if (first < this.#start || first + total > this.#start + this.#bytes.length) {
      const length = Math.max(total, Math.min(PostingsWindow.BYTES, this.#sectionEnd - first));
      this.#start = first;
      this.#bytes = this.#reader.read(first, length);
    }
    return postingsAt(info, this.#bytes, first - this.#start);
  }
}

function* mergedTerms(inputs: readonly Input[]): Generator<TermPostings> {
  const cursors = inputs.map((input) => {
    const it = input.reader.terms();
    const first = it.next();
    return { it, current: first.done === true ? null : first.value, window: new PostingsWindow(input.reader) };
  });
  const pageDocs = new ByteWriter(1 << 16);
  const pagePositions = new ByteWriter(1 << 16);
  const anchorDocs = new ByteWriter(1 << 12);
  const anchorPositions = new ByteWriter(1 << 12);
  for (;;) {
    let term: string | null = null;
    for (const c of cursors) if (c.current !== null && (term === null || c.current.term < term)) term = c.current.term;
    if (term === null) return;
    pageDocs.reset();
    pagePositions.reset();
    anchorDocs.reset();
    anchorPositions.reset();
    const state = { lastPage: -1, pageDf: 0, lastAnchor: -1, anchorDf: 0 };
    for (let i = 0; i < cursors.length; i++) {
      const cursor = cursors[i]!;
      const info: TermInfo | null = cursor.current;
      if (info === null || info.term !== term) continue;
      const postings = cursor.window.postings(info);
      remapPagePostings(postings, inputs[i]!.pageMap, pageDocs, pagePositions, state);
      remapAnchorPostings(postings, inputs[i]!.anchorMap, anchorDocs, anchorPositions, state);
      const next = cursor.it.next();
      cursor.current = next.done === true ? null : next.value;
      if (cursor.current !== null && !(cursor.current.term > term)) throw new IndexError('INDEX_CORRUPT', `${inputs[i]!.reader.path}: terms out of order at ${JSON.stringify(cursor.current.term)}`);
    }
    if (state.pageDf === 0 && state.anchorDf === 0) continue;
    yield {
      term,
      pageDf: state.pageDf,
      pageDocs,
      pagePositions,
      anchorDf: state.anchorDf,
      anchorDocs,
      anchorPositions,
    };
  }
}

function remapPagePostings(p: TermPostings<Uint8Array>, map: Int32Array, docsOut: ByteWriter, positionsOut: ByteWriter, state: { lastPage: number; pageDf: number }): void {
  if (p.pageDf === 0) return;
  const docs = new ByteReader(p.pageDocs);
  const positions = new ByteReader(p.pagePositions);
  let doc = -1;
  const freqs = [0, 0, 0];
  for (let i = 0; i < p.pageDf; i++) {
    const head = docs.varint();
    doc += Math.floor(head / 16);
    const mask = head % 16;
    let n = 0;
    for (const bit of POSITIONED_FIELDS) if ((mask & bit) !== 0) freqs[n++] = docs.varint();
    const start = positions.pos;
    for (let k = 0; k < n; k++) for (let c = Math.min(freqs[k]!, MAX_POSITIONS); c > 0; c--) positions.varint();
    const target = doc < map.length ? map[doc]! : -2;
    if (target === -2) throw new IndexError('INDEX_CORRUPT', `posting for page ${doc} beyond the segment`);
    if (target < 0) continue;
    docsOut.varint((target - state.lastPage) * 16 + mask);
    for (let k = 0; k < n; k++) docsOut.varint(freqs[k]!);
    positionsOut.bytes((p.pagePositions).subarray(start, positions.pos));
    state.lastPage = target;
    state.pageDf++;
  }
}

function remapAnchorPostings(p: TermPostings<Uint8Array>, map: Int32Array, docsOut: ByteWriter, positionsOut: ByteWriter, state: { lastAnchor: number; anchorDf: number }): void {
  if (p.anchorDf === 0) return;
  const docs = new ByteReader(p.anchorDocs);
  const positions = new ByteReader(p.anchorPositions);
  let doc = -1;
  for (let i = 0; i < p.anchorDf; i++) {
    doc += docs.varint();
    const freq = docs.varint();
    const start = positions.pos;
    for (let c = Math.min(freq, MAX_POSITIONS); c > 0; c--) positions.varint();
    const target = doc < map.length ? map[doc]! : -2;
    if (target === -2) throw new IndexError('INDEX_CORRUPT', `posting for anchor ${doc} beyond the segment`);
    if (target < 0) continue;
    docsOut.varint(target - state.lastAnchor);
    docsOut.varint(freq);
    positionsOut.bytes((p.anchorPositions).subarray(start, positions.pos));
    state.lastAnchor = target;
    state.anchorDf++;
  }
}

/**
 * The store blocks of the output: a compressed block whose pages all survive is copied as it is;
 * any other block (raw, from a commit, or with a dropped page) is rewritten compressed.
 */
function* mergedStore(inputs: readonly Input[], kind: StoreKind): Generator<StoreBlock> {
  for (const { reader, pageMap } of inputs) {
    const blocks = reader.storeBlocks(kind);
    for (let b = 0; b < blocks.length; b++) {
      const ref = blocks[b]!;
      let kept = 0;
      for (let r = ref.firstRecord; r < ref.firstRecord + ref.records; r++) if (pageMap[r]! >= 0) kept++;
      if (kept === 0) continue;
      const bytes = reader.storeBlockBytes(kind, b);
      if (kept === ref.records && bytes[0] === CODEC_DEFLATE) {
        yield { bytes, records: ref.records };
        continue;
      }
      const records = new ByteReader(blockRecords(bytes, `${reader.path}: ${kind} block ${b}`));
      const out = new ByteWriter(records.end);
      for (let r = ref.firstRecord; r < ref.firstRecord + ref.records; r++) {
        if (kind === 'head') {
          const head = decodeHead(records);
          if (pageMap[r]! >= 0) encodeHead(out, head);
        } else {
          const start = records.pos;
          records.take(records.varint());
          if (pageMap[r]! >= 0) out.bytes(records.bytes.subarray(start, records.pos));
        }
      }
      yield { bytes: encodeBlock(out.view(), true), records: kept };
    }
  }
}
