/**
 * A committed segment as the index holds it in memory: its reader, its docs' groups (resolved through
 * UrlGroups at open) and which of its entries are deleted. Deleting an entry deletes its page doc and
 * anchor docs with it; postings of deleted docs are skipped by queries and dropped by the next merge
 * that rewrites the segment.
 *
 * Resident: 4 bytes per entry, page doc and anchor doc for the groups, 1 byte each for the deletion
 * flags, plus the reader's columns.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LogSegment } from './commit-log.js';
import { decodeDeletions, type ManifestSegment } from './manifest.js';
import { ENTRY_ALIAS, NO_PAGE } from './segment-format.js';
import { SegmentReader } from './segment-reader.js';
import type { UrlGroups } from './url-groups.js';

export class LiveSegment {
  readonly id: number;
  readonly file: string;
  readonly reader: SegmentReader;
  readonly entries: number;
  readonly pages: number;
  readonly anchors: number;
  /** Group of each entry's URL. */
  readonly entryGroup: Int32Array;
  /** Group of each entry's original (duplicates), else -1. */
  readonly entryAlias: Int32Array;
  /** Group of each page doc (its entry's URL). */
  readonly pageGroup: Int32Array;
  /** Group of each anchor doc's target URL (not resolved to an original: aliases can change). */
  readonly anchorTarget: Int32Array;
  readonly entryDeleted: Uint8Array;
  readonly pageDeleted: Uint8Array;
  readonly anchorDeleted: Uint8Array;
  #deleted = 0;
  /** Deletion file on disk for the current deletions (null: none on disk). */
  deletionsFile: string | null;
  /** Deletions changed since deletionsFile was written. */
  dirty = false;
  /**
   * How many deletions deletionsFile holds: what a manifest records for this segment. Deletions made
   * since (dirty) are in the commit log only until a checkpoint writes them, so a manifest written by a
   * merge in between must not count them (petrel index check compares the two).
   */
  deletedInFile = 0;
  /** Where the segment is in its commit log (`file` is the log), or null for a segment file the manifest names. */
  readonly inLog: LogSegment | null;

  private constructor(id: number, file: string, reader: SegmentReader, groups: UrlGroups, deletionsFile: string | null, inLog: LogSegment | null = null) {
    this.id = id;
    this.file = file;
    this.inLog = inLog;
    this.reader = reader;
    const { entries, pages, anchors } = reader.footer;
    this.entries = entries;
    this.pages = pages;
    this.anchors = anchors;
    const c = reader.columns;
    this.entryGroup = new Int32Array(entries);
    this.entryAlias = new Int32Array(entries).fill(-1);
    for (let e = 0; e < entries; e++) {
      this.entryGroup[e] = groups.ensure(c.entrySourceHi[e]!, c.entrySourceLo[e]!);
      if ((c.entryFlags[e]! & ENTRY_ALIAS) !== 0) this.entryAlias[e] = groups.ensure(c.entryAliasHi[e]!, c.entryAliasLo[e]!);
    }
    this.pageGroup = new Int32Array(pages);
    for (let p = 0; p < pages; p++) this.pageGroup[p] = this.entryGroup[c.pageEntry[p]!]!;
    this.anchorTarget = new Int32Array(anchors);
    for (let a = 0; a < anchors; a++) this.anchorTarget[a] = groups.ensure(c.anchorTargetHi[a]!, c.anchorTargetLo[a]!);
    this.entryDeleted = new Uint8Array(entries);
    this.pageDeleted = new Uint8Array(pages);
    this.anchorDeleted = new Uint8Array(anchors);
    this.deletionsFile = deletionsFile;
  }

  static open(dir: string, segment: ManifestSegment, groups: UrlGroups): LiveSegment {
    const reader = SegmentReader.open(join(dir, segment.file));
    try {
      const live = new LiveSegment(segment.id, segment.file, reader, groups, segment.deletions);
      if (segment.deletions !== null) {
        const deleted = decodeDeletions(readFileSync(join(dir, segment.deletions)), segment.id, live.entries, segment.deletions);
        for (const e of deleted) live.delete(e);
        live.dirty = false;
        live.deletedInFile = live.deletedCount;
      }
      return live;
    } catch (error) {
      reader.close();
      throw error;
    }
  }

  /** A segment committed to a commit log and not yet flushed into a segment file: its deletions live in memory only. */
  static inLogFile(dir: string, id: number, logFile: string, record: LogSegment, groups: UrlGroups): LiveSegment {
    const reader = SegmentReader.open(join(dir, logFile), { offset: record.offset, length: record.length });
    try {
      return new LiveSegment(id, logFile, reader, groups, null, record);
    } catch (error) {
      reader.close();
      throw error;
    }
  }

  static fromFile(dir: string, id: number, file: string, groups: UrlGroups): LiveSegment {
    return LiveSegment.open(dir, { id, file, entries: 0, pages: 0, anchors: 0, bytes: 0, deletions: null, deleted: 0 }, groups);
  }

  get deletedCount(): number {
    return this.#deleted;
  }

  get liveEntries(): number {
    return this.entries - this.#deleted;
  }

  pageOf(entry: number): number {
    const page = this.reader.columns.entryPage[entry]!;
    return page === NO_PAGE ? -1 : page;
  }

  /** Marks an entry deleted (with its docs); false when it already was. */
  delete(entry: number): boolean {
    if (this.entryDeleted[entry] === 1) return false;
    this.entryDeleted[entry] = 1;
    const page = this.pageOf(entry);
    if (page >= 0) this.pageDeleted[page] = 1;
    const c = this.reader.columns;
    const first = c.entryAnchorFirst[entry]!;
    const end = first + c.entryAnchorCount[entry]!;
    for (let a = first; a < end; a++) this.anchorDeleted[a] = 1;
    this.#deleted++;
    this.dirty = true;
    return true;
  }

  /** Deleted entry numbers, ascending. */
  deletedEntries(): number[] {
    const out: number[] = [];
    for (let e = 0; e < this.entries; e++) if (this.entryDeleted[e] === 1) out.push(e);
    return out;
  }

  get fileBytes(): number {
    return this.reader.fileBytes;
  }

  close(): void {
    this.reader.close();
  }
}
