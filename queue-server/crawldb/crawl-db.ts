/**
 * The crawl database: one CrawlDbRecord per known URL, keyed by the 8-byte URL hash, in its own
 * B-Tree (`crawldb.btree`, 16 KiB pages so a 2,048-character URL fits), written through a stage and
 * committed with each group of result batches. It is the authority on what is known and what is done;
 * the frontier and seen-set in memory are rebuilt from it when the queue server starts.
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
import type { FileOps } from '../storage/file-ops.js';
import { DUPLICATES_FILE, DuplicateStore } from './duplicate-store.js';
import { CRAWL_STATUSES, decodeCrawlDbRecord, encodeCrawlDbRecord, type CrawlDbRecord, type CrawlDbStatus } from './record.js';

export const CRAWLDB_PAGE_SIZE = 16 * 1024;

export class CrawlDb {
  readonly #tree: StagedTree<CrawlDbRecord>;
  readonly #counts = new Map<CrawlDbStatus, number>(CRAWL_STATUSES.map((status) => [status, 0]));
  readonly #duplicatesPath: string;
  readonly #io: FileOps | undefined;
  #duplicates: DuplicateStore | null = null;
  /** No duplicates.btree when this opened: `load` builds it from the records. */
  readonly #buildDuplicates: boolean;

  private constructor(tree: StagedTree<CrawlDbRecord>, duplicatesPath: string, io: FileOps | undefined) {
    this.#tree = tree;
    this.#duplicatesPath = duplicatesPath;
    this.#io = io;
    this.#buildDuplicates = !existsSync(duplicatesPath);
  }

  static open(path: string, options: Pick<StagedTreeOptions, 'cachePages' | 'io'> = {}): CrawlDb {
    return new CrawlDb(CrawlDbTree.openFile(path, options), join(dirname(path), DUPLICATES_FILE), options.io);
  }

  #dups(): DuplicateStore {
    return (this.#duplicates ??= DuplicateStore.open(this.#duplicatesPath, { io: this.#io }));
  }

  get(hash: UrlHash): CrawlDbRecord | null {
    return this.#tree.get(hash);
  }

  /**
   * Which of `hashes` are known (a record staged in this commit window or committed), `hashes` in
   * ascending byte order: the seen-set's exact answer, one ordered pass over the tree per batch.
   */
  hasSorted(hashes: readonly UrlHash[]): boolean[] {
    return this.#tree.hasSorted(hashes);
  }

  /**
   * Stages a new or changed record and keeps counts and duplicate indexes in step. `previous`: the record
   * it replaces (null: none), when the caller has just read it with `get`, which saves reading it again.
   */
  put(hash: UrlHash, record: CrawlDbRecord, previous: CrawlDbRecord | null = this.#tree.get(hash)): void {
    const key = urlHashHex(hash);
    if (previous !== null) this.#counts.set(previous.status, (this.#counts.get(previous.status) ?? 1) - 1);
    this.#counts.set(record.status, (this.#counts.get(record.status) ?? 0) + 1);
    // An original keeps its place (its age) in the indexes while its fingerprints stay the same.
    const unchanged = previous !== null && isOriginal(previous) === isOriginal(record) && previous.signature === record.signature && previous.simhash === record.simhash;
    if (!unchanged) {
      if (previous !== null) this.#unindex(key, previous);
      this.#index(key, record);
    }
    this.#tree.stage(hash, record);
  }

  /** The URL (hash, 16 hex) of another page with this exact body signature, if any. */
  exactDuplicateOf(signature: string, self: UrlHash): string | null {
    return this.#dups().findSignature(signature, urlHashHex(self), (hex) => {
      const record = this.#tree.get(urlHashFromHex(hex));
      return record !== null && isOriginal(record) && record.signature === signature;
    });
  }

  /** The URL (hash, 16 hex) of another page whose simhash is within NEAR_DUPLICATE_DISTANCE bits. */
  nearDuplicateOf(simhash: string, self: UrlHash): string | null {
    const own = this.#tree.get(self);
    const indexedAs = own !== null && isOriginal(own) ? own.simhash : null;
    return this.#dups().findNear(simhash, urlHashHex(self), indexedAs, (hex, entrySimhash) => {
      const record = this.#tree.get(urlHashFromHex(hex));
      return record !== null && isOriginal(record) && record.simhash !== null && record.simhash === entrySimhash && hammingDistance(record.simhash, simhash) <= NEAR_DUPLICATE_DISTANCE;
    });
  }

  /** The duplicate indexes (every DUPLICATES_COMMIT_EVERY-th time), then the records. */
  commit(): void {
    this.#duplicates?.commitSome();
    this.#tree.commit();
  }

  /** Reads every committed record once (on start): rebuilds counts and indexes, hands each to `visit`. */
  load(visit: (hash: UrlHash, record: CrawlDbRecord) => void): number {
    let loaded = 0;
    for (const [hash, record] of this.#tree.entries()) {
      this.#counts.set(record.status, (this.#counts.get(record.status) ?? 0) + 1);
      if (this.#buildDuplicates) this.#index(urlHashHex(hash), record);
      visit(hash, record);
      loaded++;
    }
    if (this.#buildDuplicates && this.#duplicates !== null) this.#duplicates.commitSome(true);
    return loaded;
  }

  /** Reads every committed record again (a new crawl in the same process); counts and indexes stay as they are. */
  each(visit: (hash: UrlHash, record: CrawlDbRecord) => void): number {
    let visited = 0;
    for (const [hash, record] of this.#tree.entries()) {
      visit(hash, record);
      visited++;
    }
    return visited;
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

  check(): ReturnType<StagedTree<CrawlDbRecord>['check']> {
    return this.#tree.check();
  }

  entries(): IterableIterator<[UrlHash, CrawlDbRecord]> {
    return this.#tree.entries();
  }

  close(): void {
    try {
      this.#duplicates?.close();
    } finally {
      this.#tree.close();
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
