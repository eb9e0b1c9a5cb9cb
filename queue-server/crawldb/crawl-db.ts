/**
 * The crawl database: one CrawlDbRecord per known URL, keyed by the 8-byte URL hash, in its own
 * B-Tree (`crawldb.btree`, 16 KiB pages so a 2,048-character URL fits), written through a stage and
 * committed with each group of result batches. It is the authority on what is known and what is done;
 * the frontier and seen-set in memory are rebuilt from it when the queue server starts.
 *
 * New URLs' first records go to an insert log beside the tree (storage/insert-log.ts) and are swept
 * into the tree in key order a slice per commit, so that a commit of thousands of new URLs does not
 * copy thousands of random leaves; reads ask the stage, the tree, then the log.
 *
 * Alongside: counts by status (in memory, rebuilt from the records on start), and the two indexes
 * that find duplicates (exact: body signature; near: 64-bit simhash within a few bits), on disk in
 * `duplicates.btree` beside it (duplicate-store.ts), opened when first needed, committed with this
 * tree, and built from the records once when a crawl database has none yet (one from before it).
 * Every answer of the indexes is checked against the record of the page it names.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hammingDistance, NEAR_DUPLICATE_DISTANCE } from '../../shared/simhash.js';
import { urlHash, urlHashFromHex, urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { StagedTree, type StagedTreeOptions } from '../storage/staged-tree.js';
import { InsertLog } from '../storage/insert-log.js';
import { mergedEntries } from './crawl-db-reader.js';
import type { FileOps } from '../storage/file-ops.js';
import { DUPLICATES_FILE, DuplicateStore } from './duplicate-store.js';
import { CRAWL_STATUSES, decodeCrawlDbRecord, encodeCrawlDbRecord, type CrawlDbRecord, type CrawlDbStatus } from './record.js';

export const CRAWLDB_PAGE_SIZE = 16 * 1024;
const FIRST_KEY = new Uint8Array(8);

export class CrawlDb {
  readonly #tree: StagedTree<CrawlDbRecord>;
  readonly #log: InsertLog;
  /** Logged keys whose changed records are staged in the tree: forgotten by the log after the commit. */
  #superseded: UrlHash[] = [];
  readonly #counts = new Map<CrawlDbStatus, number>(CRAWL_STATUSES.map((status) => [status, 0]));
  readonly #duplicatesPath: string;
  readonly #io: FileOps | undefined;
  #duplicates: DuplicateStore | null = null;
  /** No duplicates.btree when this opened: `load` builds it from the records. */
  readonly #buildDuplicates: boolean;
  /** The search index's commit count to record with the next commit (noteIndexCommits), or null. */
  #indexCommits: number | null = null;

  private constructor(tree: StagedTree<CrawlDbRecord>, log: InsertLog, duplicatesPath: string, io: FileOps | undefined) {
    this.#tree = tree;
    this.#log = log;
    this.#duplicatesPath = duplicatesPath;
    this.#io = io;
    this.#buildDuplicates = !existsSync(duplicatesPath);
  }

  /**
   * `logEntries`: records the insert log holds at most (0: every record goes to the tree at once);
   * `logSliceKeys`: keys a sweep slice merges, fixed (tests of long sweeps).
   */
  static open(path: string, options: Pick<StagedTreeOptions, 'cachePages' | 'io'> & { logEntries?: number; logSliceKeys?: number } = {}): CrawlDb {
    const tree = CrawlDbTree.openFile(path, options);
    let log: InsertLog;
    try {
      log = InsertLog.open(path, { io: options.io, maxEntries: options.logEntries, sliceKeys: options.logSliceKeys });
    } catch (error) {
      tree.close();
      throw error;
    }
    return new CrawlDb(tree, log, join(dirname(path), DUPLICATES_FILE), options.io);
  }

  #dups(): DuplicateStore {
    return (this.#duplicates ??= DuplicateStore.open(this.#duplicatesPath, { io: this.#io }));
  }

  get(hash: UrlHash): CrawlDbRecord | null {
    const record = this.#tree.get(hash);
    if (record !== null || this.#log.size === 0) return record;
    const logged = this.#log.read(hash, urlHashHex(hash));
    return logged === null ? null : decodeCrawlDbRecord(logged);
  }

  /**
   * Which of `hashes` are known (a record staged in this commit window or committed), `hashes` in
   * ascending byte order: the seen-set's exact answer, one ordered pass over the tree per batch.
   */
  hasSorted(hashes: readonly UrlHash[]): boolean[] {
    const found = this.#tree.hasSorted(hashes);
    if (this.#log.size === 0) return found;
    for (let i = 0; i < hashes.length; i++) if (!found[i]) found[i] = this.#log.has(hashes[i]!, urlHashHex(hashes[i]!));
    return found;
  }

  /**
   * Stages a new or changed record and keeps counts and duplicate indexes in step. `previous`: the record
   * it replaces (null: none), when the caller has just read it with `get`, which saves reading it again.
   * `indexable: false`: the page just fetched says noindex, so it is nobody's original: a page with the
   * same body that may be indexed (a print version marked noindex, the article not) must not be taken
   * for its copy and vanish from search. It leaves the duplicate indexes; a 304 later keeps it out
   * (its fingerprints are unchanged).
   */
  put(hash: UrlHash, record: CrawlDbRecord, previous: CrawlDbRecord | null = this.get(hash), options: { indexable?: boolean } = {}): void {
    const key = urlHashHex(hash);
    if (previous !== null) this.#counts.set(previous.status, (this.#counts.get(previous.status) ?? 1) - 1);
    this.#counts.set(record.status, (this.#counts.get(record.status) ?? 0) + 1);
    const indexable = options.indexable !== false;
    // An original keeps its place (its age) in the indexes while its fingerprints stay the same.
    const unchanged = indexable && previous !== null && isOriginal(previous) === isOriginal(record) && previous.signature === record.signature && previous.simhash === record.simhash;
    if (!unchanged) {
      if (previous !== null) this.#unindex(key, previous);
      if (indexable) this.#index(key, record);
    }
    if (previous === null && !this.#tree.isStaged(key) && this.#log.hasRoom) {
      this.#log.add(hash, key, encodeCrawlDbRecord(record));
      return;
    }
    if (previous !== null && this.#log.has(hash, key)) this.#log.supersede(hash, key, this.#superseded);
    this.#tree.stage(hash, record);
  }

  /** The URL (hash, 16 hex) of another page with this exact body signature, if any. */
  exactDuplicateOf(signature: string, self: UrlHash): string | null {
    return this.#dups().findSignature(signature, urlHashHex(self), (hex) => {
      const record = this.get(urlHashFromHex(hex));
      return record !== null && isOriginal(record) && record.signature === signature;
    });
  }

  /**
   * Whether a duplicate's original still stands: known and an original (fetched or not modified: not
   * gone, redirected or a duplicate itself). Its body is not compared: the original of a page that
   * names it as canonical need not hold the same one. A duplicate whose original went (404, 410) is
   * nobody's copy.
   */
  originalStands(copy: CrawlDbRecord): boolean {
    if (copy.duplicateOf === null) return false;
    const original = this.get(urlHashFromHex(copy.duplicateOf));
    return original !== null && isOriginal(original);
  }

  /** The URL (hash, 16 hex) of another page whose simhash is within NEAR_DUPLICATE_DISTANCE bits. */
  nearDuplicateOf(simhash: string, self: UrlHash): string | null {
    const own = this.get(self);
    const indexedAs = own !== null && isOriginal(own) ? own.simhash : null;
    return this.#dups().findNear(simhash, urlHashHex(self), indexedAs, (hex, entrySimhash) => {
      const record = this.get(urlHashFromHex(hex));
      return record !== null && isOriginal(record) && record.simhash !== null && record.simhash === entrySimhash && hammingDistance(record.simhash, simhash) <= NEAR_DUPLICATE_DISTANCE;
    });
  }

  /**
   * How many commits the search index had made when this crawl database last committed (0: none
   * recorded; the tree's meta stamp). The index commits first in each group commit (Crawl.commit), so
   * an index that holds fewer lost commits that were acknowledged: its commit log was cut or replaced.
   */
  get indexCommits(): number {
    return this.#tree.stats().stamp;
  }

  /** Records with the next commit how many commits the search index has made (see `indexCommits`). */
  noteIndexCommits(count: number): void {
    this.#indexCommits = count;
  }

  /**
   * The duplicate indexes (every DUPLICATES_COMMIT_EVERY-th time), then the records: new URLs' appended
   * to the insert log, the others and a slice of the log's oldest file in one tree commit. A failure
   * keeps what was not written for the next call.
   */
  commit(): void {
    this.#duplicates?.commitSome();
    this.#log.append();
    const slice = this.#log.sweepSlice(() => this.#tree.stats().pages);
    const indexCommits = this.#indexCommits;
    if (slice === null) this.#tree.commit(indexCommits === null ? undefined : (batch) => batch.setStamp(indexCommits));
    else {
      this.#tree.commit((batch) => {
        // Only where the tree has no record: a changed record staged in this commit, or one that left
        // the log before a restart, is newer than the log's copy. The slice is in key order, so each
        // leaf takes its run of keys in one pass.
        batch.insertAbsentSorted(slice.entries);
        if (indexCommits !== null) batch.setStamp(indexCommits);
      });
      this.#log.sweptTo(slice);
    }
    this.#indexCommits = null;
    if (this.#superseded.length > 0) {
      this.#log.forget(this.#superseded);
      this.#superseded = [];
    }
  }

  /** Reads every committed record once (on start): rebuilds counts and indexes, hands each to `visit`. */
  load(visit: (hash: UrlHash, record: CrawlDbRecord) => void): number {
    const loaded = this.#readAll((hash, record) => {
      this.#counts.set(record.status, (this.#counts.get(record.status) ?? 0) + 1);
      if (this.#buildDuplicates) this.#index(urlHashHex(hash), record);
      visit(hash, record);
    });
    if (this.#buildDuplicates && this.#duplicates !== null) this.#duplicates.commitSome(true);
    return loaded;
  }

  /** Reads every committed record again (a new crawl in the same process); counts and indexes stay as they are. */
  each(visit: (hash: UrlHash, record: CrawlDbRecord) => void): number {
    return this.#readAll(visit);
  }

  countsByStatus(): Record<CrawlDbStatus, number> {
    return Object.fromEntries(this.#counts) as Record<CrawlDbStatus, number>;
  }

  get size(): number {
    let total = 0;
    for (const count of this.#counts.values()) total += count;
    return total;
  }

  stats(): ReturnType<StagedTree<CrawlDbRecord>['stats']> {
    return this.#tree.stats();
  }

  logStats(): ReturnType<InsertLog['stats']> {
    return this.#log.stats();
  }

  check(): ReturnType<StagedTree<CrawlDbRecord>['check']> {
    return this.#tree.check();
  }

  /** Committed records in key order, the tree's and the insert log's (commit first for the staged ones). */
  *entries(): IterableIterator<[UrlHash, CrawlDbRecord]> {
    for (const [key, bytes] of mergedEntries(this.#tree.committedFrom(FIRST_KEY), this.#log)) yield [key as UrlHash, decodeCrawlDbRecord(bytes)];
  }

  /**
   * Every committed record once, in no key order: the tree's in key order (read in place, no copy of
   * each record), then the log's as its files lie (InsertLog.scan: sequential reads, where a merge in
   * key order costs a read per logged record).
   * A key in both is the tree's: met in the tree, the log's copy is forgotten (a hash look-up in the
   * log's index per tree record), so the scan skips it.
   */
  #readAll(visit: (hash: UrlHash, record: CrawlDbRecord) => void): number {
    const logged = this.#log.size > 0;
    let read = this.#tree.forEachCommitted((key, bytes) => {
      // The key is a view into the page: the visitor may keep the hash it is handed.
      const hash = Uint8Array.prototype.slice.call(key) as UrlHash;
      if (logged) this.#log.forgetCopyOf(hash);
      visit(hash, decodeCrawlDbRecord(bytes));
    });
    if (logged) {
      this.#log.scan((hash, bytes) => {
        visit(hash, decodeCrawlDbRecord(bytes));
        read++;
      });
    }
    return read;
  }

  /** Commits what is staged (records and log), then closes the files (closed even when the commit fails, which throws). */
  close(): void {
    try {
      this.commit();
    } finally {
      try {
        this.#duplicates?.close();
      } finally {
        try {
          this.#tree.close();
        } finally {
          this.#log.close();
        }
      }
    }
  }

  /** Only originals are indexed, so a duplicate never points at another duplicate. */
  #index(key: string, record: CrawlDbRecord): void {
    if (!isOriginal(record)) return;
    if (record.signature !== null) this.#dups().addSignature(record.signature, key);
    if (record.simhash !== null) this.#dups().addNear(key, record.simhash);
  }

  #unindex(key: string, record: CrawlDbRecord): void {
    if (!isOriginal(record)) return;
    if (record.signature !== null) this.#dups().removeSignature(record.signature, key);
    if (record.simhash !== null) this.#dups().removeNear(key, record.simhash);
  }
}

function isOriginal(record: CrawlDbRecord): boolean {
  return record.status === 'fetched' || record.status === 'notmodified';
}

class CrawlDbTree extends StagedTree<CrawlDbRecord> {
  static openFile(path: string, options: Pick<StagedTreeOptions, 'cachePages' | 'io'>): StagedTree<CrawlDbRecord> {
    return new CrawlDbTree(StagedTree.openTree(path, { pageSize: CRAWLDB_PAGE_SIZE, cachePages: options.cachePages ?? 1024, io: options.io }), {
      encode: encodeCrawlDbRecord,
      decode: decodeCrawlDbRecord,
    });
  }
}

/** What a fetched page is to the others: the URL it duplicates, the URL it names as canonical, and a redirect's target, as 16-hex URL hashes. */
export function relationsOf(
  crawlDb: CrawlDb,
  self: UrlHash,
  page: { url: string; signature: string | null; simhash: string | null; canonical: string | null; redirectTo: string | null },
): { duplicateOf: string | null; canonicalOf: string | null; redirectTarget: string | null } {
  const selfHex = urlHashHex(self);
  const duplicate =
    (page.signature !== null ? crawlDb.exactDuplicateOf(page.signature, self) : null) ?? (page.simhash !== null ? crawlDb.nearDuplicateOf(page.simhash, self) : null);
  const canonical = page.canonical === null ? null : normalizeUrl(page.canonical);
  const canonicalOf = canonical?.ok === true && canonical.url !== page.url ? urlHashHex(urlHash(canonical.url)) : null;
  const target = page.redirectTo === null ? null : normalizeUrl(page.redirectTo, page.url);
  return {
    duplicateOf: duplicate === selfHex ? null : duplicate,
    canonicalOf,
    redirectTarget: target?.ok === true ? urlHashHex(urlHash(target.url)) : null,
  };
}
