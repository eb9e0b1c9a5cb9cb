/**
 * `petrel index check`: verifies an index directory without changing it. Every fault is one line
 * with a stable code:
 *
 *   MANIFEST_CORRUPT     the manifest is missing its checksum or does not parse
 *   SEGMENT_CORRUPT      a segment's header, footer or small sections fail their checks (it cannot be opened)
 *   DELETIONS_CORRUPT    a deletion file fails its checksum or does not belong to its segment
 *   SECTION_CHECKSUM     a postings, dictionary or store section fails its CRC-32C
 *   MANIFEST_MISMATCH    the manifest's counts for a segment differ from the segment's own
 *   TERMS_UNSORTED       dictionary terms not strictly ascending, or a block index entry that is not its block's first term
 *   POSTINGS_BOUNDS      postings lengths that do not add up to the postings section
 *   POSTING_INVALID      a posting list that does not decode: doc ids not ascending or beyond the segment,
 *                        a doc without its entry, bad field mask or frequency, positions not ascending,
 *                        a document frequency that differs from the postings
 *   COLUMNS_INVALID      entries, page docs and anchor docs that do not refer to each other consistently
 *   STORE_INVALID        a store block that does not decompress, or a page without its stored document
 *   DUPLICATE_LIVE_ENTRY a URL with a live entry in two segments
 *   LOG_CORRUPT          a commit log with a damaged record before a later commit (not a torn tail),
 *                        or a log that cannot be read
 *   COMMITS_MISSING      fewer commits than the crawl database recorded when it last committed (given as
 *                        `recordedCommits`): acknowledged commits lost, a log cut short at a record's end
 *                        or replaced by an older copy (which no check of the index alone can tell)
 *
 * The commit logs the manifest says to replay (commit-log.ts) are checked too: each committed group's
 * segments as any segment, then its entries supersede their URLs' earlier live entries and its removals
 * remove them, as a reopen replays them. Bytes after the last COMMIT record are an unacknowledged tail
 * (a kill during a commit), reported as `logTailBytes`, not a fault: the next writable open cuts them.
 *
 * Checking while a queue server writes the index can report a segment that a merge removed in the
 * meantime (SEGMENT_CORRUPT: no such file); run it on a quiet index for a verdict.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ByteReader, hashHex } from './bytes.js';
import { IndexError } from './errors.js';
import { logFileName, scanLog } from './commit-log.js';
import { decodeDeletions, readManifest, type Manifest } from './manifest.js';
import { existsSync } from 'node:fs';
import { blockRecords, decodeHead } from './doc-store.js';
import { FIELD_BODY, FIELD_HEADING, FIELD_META, FIELD_TITLE, MAX_POSITIONS, NO_PAGE } from './segment-format.js';
import { SegmentReader } from './segment-reader.js';

export type IndexFaultCode =
  | 'MANIFEST_CORRUPT' | 'SEGMENT_CORRUPT' | 'DELETIONS_CORRUPT' | 'SECTION_CHECKSUM' | 'MANIFEST_MISMATCH'
  | 'TERMS_UNSORTED' | 'POSTINGS_BOUNDS' | 'POSTING_INVALID' | 'COLUMNS_INVALID' | 'STORE_INVALID' | 'DUPLICATE_LIVE_ENTRY' | 'LOG_CORRUPT'
  | 'COMMITS_MISSING';

export interface IndexFault {
  readonly code: IndexFaultCode;
  readonly segment?: string;
  readonly message: string;
}

export interface IndexCheckReport {
  readonly ok: boolean;
  readonly dir: string;
  readonly segments: number;
  readonly entries: number;
  readonly livePages: number;
  readonly terms: number;
  readonly postings: number;
  /** Commit logs replayed over the segment files, the segments they hold, and the unacknowledged bytes after their last commit. */
  readonly logs: number;
  readonly logSegments: number;
  readonly logTailBytes: number;
  /** Commits the index holds (the manifest's and its logs'), and what the crawl database recorded (null: not given). */
  readonly commits: number;
  readonly recordedCommits: number | null;
  readonly faults: IndexFault[];
}

/** At most this many faults are listed per segment (a badly damaged one would print thousands). */
const FAULTS_PER_SEGMENT = 20;

/**
 * `recordedCommits`: the search index's commit count the crawl database recorded at its last commit
 * (CrawlDb.indexCommits), when the caller has it; an index holding fewer is faulty (COMMITS_MISSING).
 */
export function checkIndex(dir: string, options: { recordedCommits?: number } = {}): IndexCheckReport {
  const faults: IndexFault[] = [];
  const recordedCommits = options.recordedCommits ?? null;
  const empty = { dir, segments: 0, entries: 0, livePages: 0, terms: 0, postings: 0, logs: 0, logSegments: 0, logTailBytes: 0, commits: 0, recordedCommits };
  let manifest: Manifest | null;
  try {
    manifest = readManifest(dir);
  } catch (error) {
    return { ...empty, ok: false, faults: [{ code: 'MANIFEST_CORRUPT', message: (error as Error).message }] };
  }
  if (manifest === null && !existsSync(join(dir, logFileName(1)))) {
    if (recordedCommits !== null && recordedCommits > 0) faults.push(missingCommits(0, recordedCommits));
    return { ...empty, ok: faults.length === 0, faults };
  }
  manifest ??= { format: 'petrel-index', version: 1, generation: 0, commits: 0, nextSegmentId: 1, segments: [], log: 1 };
  let entries = 0;
  let terms = 0;
  let postings = 0;
  /** URL hash -> the segment holding its live entry, and whether that entry has a page. */
  const liveOwner = new Map<string, { owner: string; page: boolean }>();
  for (const spec of manifest.segments) {
    const segmentFaults: IndexFault[] = [];
    const fault = (code: IndexFaultCode, message: string): void => {
      if (segmentFaults.length < FAULTS_PER_SEGMENT) segmentFaults.push({ code, segment: spec.file, message });
    };
    let reader: SegmentReader;
    try {
      reader = SegmentReader.open(join(dir, spec.file));
    } catch (error) {
      faults.push({ code: 'SEGMENT_CORRUPT', segment: spec.file, message: (error as Error).message });
      continue;
    }
    try {
      const { footer, columns: c } = reader;
      if (footer.entries !== spec.entries || footer.pages !== spec.pages || footer.anchors !== spec.anchors) {
        fault('MANIFEST_MISMATCH', `manifest says ${spec.entries}/${spec.pages}/${spec.anchors} entries/pages/anchors, the segment ${footer.entries}/${footer.pages}/${footer.anchors}`);
      }
      let deleted = new Uint8Array(footer.entries);
      if (spec.deletions !== null) {
        try {
          const list = decodeDeletions(readFileSync(join(dir, spec.deletions)), spec.id, footer.entries, spec.deletions);
          for (const e of list) deleted[e] = 1;
          if (list.length !== spec.deleted) fault('MANIFEST_MISMATCH', `manifest says ${spec.deleted} deletions, ${spec.deletions} has ${list.length}`);
        } catch (error) {
          segmentFaults.push({ code: 'DELETIONS_CORRUPT', segment: spec.file, message: (error as Error).message });
          deleted = new Uint8Array(footer.entries);
        }
      }
      for (let e = 0; e < footer.entries; e++) {
        entries++;
        if (deleted[e] === 1) continue;
        const key = hashHex(c.entrySourceHi[e]!, c.entrySourceLo[e]!);
        const owner = liveOwner.get(key);
        if (owner !== undefined) fault('DUPLICATE_LIVE_ENTRY', `URL hash ${key} has a live entry here and in ${owner.owner}`);
        liveOwner.set(key, { owner: spec.file, page: c.entryPage[e] !== NO_PAGE });
      }
      const counted = checkSegmentContents(reader, fault);
      terms += counted.terms;
      postings += counted.postings;
    } catch (error) {
      if (!(error instanceof IndexError)) throw error;
      fault('SEGMENT_CORRUPT', error.message);
    } finally {
      reader.close();
    }
    faults.push(...segmentFaults);
  }

  let logs = 0;
  let logSegments = 0;
  let logTailBytes = 0;
  let commits = manifest.commits;
  for (let n = manifest.log ?? 1; existsSync(join(dir, logFileName(n))); n++) {
    const file = logFileName(n);
    logs++;
    let scan;
    try {
      scan = scanLog(join(dir, file));
    } catch (error) {
      faults.push({ code: 'LOG_CORRUPT', segment: file, message: (error as Error).message });
      continue;
    }
    if (scan.damage !== null) faults.push({ code: 'LOG_CORRUPT', segment: file, message: scan.damage });
    logTailBytes += scan.fileBytes - scan.validEnd;
    for (const group of scan.groups) {
      for (const record of group.segments) {
        logSegments++;
        const name = `${file}@${record.offset}`;
        const segmentFaults: IndexFault[] = [];
        const fault = (code: IndexFaultCode, message: string): void => {
          if (segmentFaults.length < FAULTS_PER_SEGMENT) segmentFaults.push({ code, segment: name, message });
        };
        let reader: SegmentReader;
        try {
          reader = SegmentReader.open(join(dir, file), { offset: record.offset, length: record.length });
        } catch (error) {
          faults.push({ code: 'SEGMENT_CORRUPT', segment: name, message: (error as Error).message });
          continue;
        }
        try {
          const c = reader.columns;
          // Replayed as a reopen does: each entry supersedes its URL's live entry.
          for (let e = 0; e < reader.footer.entries; e++) {
            entries++;
            liveOwner.set(hashHex(c.entrySourceHi[e]!, c.entrySourceLo[e]!), { owner: name, page: c.entryPage[e] !== NO_PAGE });
          }
          const counted = checkSegmentContents(reader, fault);
          terms += counted.terms;
          postings += counted.postings;
        } catch (error) {
          if (!(error instanceof IndexError)) throw error;
          fault('SEGMENT_CORRUPT', error.message);
        } finally {
          reader.close();
        }
        faults.push(...segmentFaults);
      }
      for (let i = 0; i < group.removed.length; i += 2) liveOwner.delete(hashHex(group.removed[i]!, group.removed[i + 1]!));
      commits = Math.max(commits, group.commits);
    }
  }
  if (recordedCommits !== null && commits < recordedCommits) faults.push(missingCommits(commits, recordedCommits));
  let livePages = 0;
  for (const live of liveOwner.values()) if (live.page) livePages++;
  return { ok: faults.length === 0, dir, segments: manifest.segments.length, entries, livePages, terms, postings, logs, logSegments, logTailBytes, commits, recordedCommits, faults };
}

function missingCommits(commits: number, recorded: number): IndexFault {
  return {
    code: 'COMMITS_MISSING',
    message: `the index holds ${commits} commits, the crawl database recorded ${recorded}: ${recorded - commits} acknowledged commits are missing (a commit log cut short or replaced by an older copy)`,
  };
}

/** What a segment holds, wherever it lies (a segment file or a commit log's record): checksums, columns, terms, store. */
function checkSegmentContents(reader: SegmentReader, fault: (code: IndexFaultCode, message: string) => void): { terms: number; postings: number } {
  for (const section of ['postings', 'dictionary', 'storeBlocks'] as const) {
    if (!reader.verifySection(section)) fault('SECTION_CHECKSUM', `section ${section} checksum mismatch`);
  }
  checkColumns(reader, fault);
  const counted = checkTerms(reader, fault);
  checkStore(reader, fault);
  return counted;
}

function checkColumns(reader: SegmentReader, fault: (code: IndexFaultCode, message: string) => void): void {
  const { footer, columns: c } = reader;
  let nextAnchor = 0;
  const pageSeen = new Uint8Array(footer.pages);
  for (let e = 0; e < footer.entries; e++) {
    const page = c.entryPage[e]!;
    if (page !== NO_PAGE) {
      if (page >= footer.pages) fault('COLUMNS_INVALID', `entry ${e} names page ${page} of ${footer.pages}`);
      else if (c.pageEntry[page] !== e) fault('COLUMNS_INVALID', `entry ${e} names page ${page}, which names entry ${c.pageEntry[page]}`);
      else pageSeen[page] = 1;
    }
    if (c.entryAnchorFirst[e] !== nextAnchor) fault('COLUMNS_INVALID', `entry ${e} anchors start at ${c.entryAnchorFirst[e]}, expected ${nextAnchor}`);
    nextAnchor = c.entryAnchorFirst[e]! + c.entryAnchorCount[e]!;
  }
  if (nextAnchor !== footer.anchors) fault('COLUMNS_INVALID', `entries cover ${nextAnchor} anchor docs of ${footer.anchors}`);
  for (let p = 0; p < footer.pages; p++) if (pageSeen[p] !== 1) fault('COLUMNS_INVALID', `page ${p} belongs to no entry`);
  for (let a = 0; a < footer.anchors; a++) if (c.anchorLength[a] === 0) fault('COLUMNS_INVALID', `anchor doc ${a} has no terms`);
}

function checkTerms(reader: SegmentReader, fault: (code: IndexFaultCode, message: string) => void): { terms: number; postings: number } {
  const { footer } = reader;
  const postingsSection = footer.sections.postings;
  let previous: string | null = null;
  let terms = 0;
  let postings = 0;
  let expectedAt = postingsSection.offset;
  let block = 0;
  let inBlock = 0;
  for (const info of reader.terms()) {
    if (inBlock === 0 && info.term !== reader.blockFirstTerm(block)) fault('TERMS_UNSORTED', `dictionary block ${block} starts with ${JSON.stringify(info.term)}, its index entry says ${JSON.stringify(reader.blockFirstTerm(block))}`);
    if (++inBlock === 32) {
      inBlock = 0;
      block++;
    }
    if (previous !== null && !(previous < info.term)) fault('TERMS_UNSORTED', `term ${JSON.stringify(info.term)} follows ${JSON.stringify(previous)}`);
    previous = info.term;
    terms++;
    if (info.pageDf === 0 && info.anchorDf === 0) fault('POSTING_INVALID', `term ${JSON.stringify(info.term)} has no postings`);
    const start = info.pageDf > 0 ? info.pageDocsAt : info.anchorDocsAt;
    if (start !== expectedAt) fault('POSTINGS_BOUNDS', `postings of ${JSON.stringify(info.term)} start at ${start}, expected ${expectedAt}`);
    expectedAt = info.anchorDocsAt + info.anchorDocsLength + info.anchorPositionsLength;
    if (expectedAt > postingsSection.offset + postingsSection.length) {
      fault('POSTINGS_BOUNDS', `postings of ${JSON.stringify(info.term)} run past the postings section`);
      return { terms, postings };
    }
    const p = reader.postings(info);
    try {
      postings += checkPagePostings(reader, p.pageDf, p.pageDocs, p.pagePositions, info.term.startsWith('\u0001'));
      postings += checkAnchorPostings(reader, p.anchorDf, p.anchorDocs, p.anchorPositions);
    } catch (error) {
      fault('POSTING_INVALID', `term ${JSON.stringify(info.term)}: ${(error as Error).message}`);
    }
  }
  if (expectedAt !== postingsSection.offset + postingsSection.length) fault('POSTINGS_BOUNDS', `the terms' postings end at ${expectedAt}, the section at ${postingsSection.offset + postingsSection.length}`);
  return { terms, postings };
}

function invalid(message: string): never {
  throw new Error(message);
}

function checkPositions(positions: ByteReader, count: number, where: string): void {
  for (let k = 0; k < count; k++) {
    const d = positions.varint();
    if (k > 0 && d < 1) invalid(`positions of ${where} do not ascend`);
  }
}

function checkPagePostings(reader: SegmentReader, df: number, docBytes: Uint8Array, posBytes: Uint8Array, meta: boolean): number {
  const { footer, columns: c } = reader;
  const docs = new ByteReader(docBytes);
  const positions = new ByteReader(posBytes);
  let doc = -1;
  for (let i = 0; i < df; i++) {
    const head = docs.varint();
    const delta = Math.floor(head / 16);
    const mask = head % 16;
    if (delta < 1) invalid(`page doc ids do not ascend at posting ${i}`);
    doc += delta;
    if (doc >= footer.pages) invalid(`posting ${i} names page ${doc} of ${footer.pages}`);
    if (c.pageEntry[doc]! >= footer.entries || c.entryPage[c.pageEntry[doc]!] !== doc) invalid(`page ${doc} has no entry`);
    if (mask === 0) invalid(`posting ${i} has no field`);
    if (meta !== ((mask & FIELD_META) !== 0) || (meta && mask !== FIELD_META)) invalid(`posting ${i} mixes meta and text fields`);
    const freqs: number[] = [];
    for (const bit of [FIELD_TITLE, FIELD_HEADING, FIELD_BODY]) {
      if ((mask & bit) === 0) continue;
      const f = docs.varint();
      if (f < 1) invalid(`posting ${i} has frequency 0`);
      freqs.push(f);
    }
    for (const f of freqs) checkPositions(positions, Math.min(f, MAX_POSITIONS), `page ${doc}`);
  }
  if (!docs.done) invalid(`${docs.end - docs.pos} bytes after ${df} page postings`);
  if (!positions.done) invalid(`${positions.end - positions.pos} position bytes left over`);
  return df;
}

function checkAnchorPostings(reader: SegmentReader, df: number, docBytes: Uint8Array, posBytes: Uint8Array): number {
  const { footer } = reader;
  const docs = new ByteReader(docBytes);
  const positions = new ByteReader(posBytes);
  let doc = -1;
  for (let i = 0; i < df; i++) {
    const delta = docs.varint();
    if (delta < 1) invalid(`anchor doc ids do not ascend at posting ${i}`);
    doc += delta;
    if (doc >= footer.anchors) invalid(`posting ${i} names anchor doc ${doc} of ${footer.anchors}`);
    const f = docs.varint();
    if (f < 1) invalid(`anchor posting ${i} has frequency 0`);
    checkPositions(positions, Math.min(f, MAX_POSITIONS), `anchor doc ${doc}`);
  }
  if (!docs.done) invalid(`${docs.end - docs.pos} bytes after ${df} anchor postings`);
  if (!positions.done) invalid(`${positions.end - positions.pos} anchor position bytes left over`);
  return df;
}

function checkStore(reader: SegmentReader, fault: (code: IndexFaultCode, message: string) => void): void {
  for (const kind of ['head', 'text'] as const) {
    let records = 0;
    const blocks = reader.storeBlocks(kind);
    for (let b = 0; b < blocks.length; b++) {
      const ref = blocks[b]!;
      if (ref.firstRecord !== records) fault('STORE_INVALID', `${kind} block ${b} starts at record ${ref.firstRecord}, expected ${records}`);
      try {
        const bytes = new ByteReader(blockRecords(reader.storeBlockBytes(kind, b), `${kind} block ${b}`));
        for (let r = 0; r < ref.records; r++) {
          if (kind === 'head') decodeHead(bytes);
          else bytes.string();
        }
        if (!bytes.done) fault('STORE_INVALID', `${kind} block ${b} has bytes after its ${ref.records} records`);
      } catch (error) {
        fault('STORE_INVALID', `${kind} block ${b}: ${(error as Error).message}`);
      }
      records += ref.records;
    }
    if (records !== reader.footer.pages) fault('STORE_INVALID', `${records} ${kind} records for ${reader.footer.pages} pages`);
  }
}
