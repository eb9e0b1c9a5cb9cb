/**
 * The search index as one of the crawl's stores: changes decided while results are applied
 * (index-change.ts) are queued here and written by the group commit (Crawl.commit), like every other
 * store's, so applying results never writes a file and an acknowledged result is searchable.
 *
 * Why a queue in front of SearchIndex: the index stages into its segment builder, which writes a
 * segment file when it outgrows its bound (I/O while results are applied), and after a failed write
 * or commit the index must be reopened (search-index.ts `#broken`), which drops what it had staged.
 * So the changes of the commit in flight are kept here until a commit of them succeeds: a commit that
 * fails (ENOSPC, EIO) reopens the index from its last manifest and stages them all again, so a retry
 * writes everything anew, as the other stores' retries do (ARCHITECTURE.md, "A failing disk").
 *
 * Memory: the queued changes of one commit window (their index data came with the posts, bounded by
 * shared/index-data.ts), plus the index's own (search-index.ts header).
 */
import type { IndexError } from '../search/errors.js';
import { SearchIndex, type IndexChange, type SearchIndexOptions } from '../search/search-index.js';

export class IndexStore {
  readonly #dir: string;
  readonly #options: SearchIndexOptions;
  #index: SearchIndex;
  /** Changes not yet in a successful commit, in the order they were decided. */
  #queued: IndexChange[] = [];
  /** A write or commit failed: the index is reopened before the next attempt. */
  #failed = false;
  /** Changes the index refused (INDEX_BAD_DATA: data the protocol's schema let through but the index cannot take). */
  refused = 0;

  private constructor(dir: string, options: SearchIndexOptions, index: SearchIndex) {
    this.#dir = dir;
    this.#options = options;
    this.#index = index;
  }

  static open(dir: string, options: SearchIndexOptions = {}): IndexStore {
    return new IndexStore(dir, options, SearchIndex.open(dir, options));
  }

  /** The index as of the last commit (searches). */
  get index(): SearchIndex {
    return this.#index;
  }

  /** Queues a change for the next commit; a later change of the same URL replaces it there. */
  stage(change: IndexChange): void {
    this.#queued.push(change);
  }

  get queued(): number {
    return this.#queued.length;
  }

  /** Writes the queued changes and commits the index; on failure keeps them for the next call and throws. */
  commit(): void {
    if (this.#queued.length === 0 && !this.#failed) return;
    if (this.#failed) {
      // What the failed attempt staged or wrote is dropped with the old handle (orphan files are removed on open).
      const old = this.#index;
      void old.close();
      this.#index = SearchIndex.open(this.#dir, this.#options);
      this.#failed = false;
    }
    try {
      for (const change of this.#queued) {
        try {
          this.#index.stage(change);
        } catch (error) {
          if ((error as IndexError).code !== 'INDEX_BAD_DATA') throw error;
          this.refused++;
        }
      }
      this.#index.commit();
    } catch (error) {
      this.#failed = true;
      throw error;
    }
    this.#queued = [];
  }

  /** Stops merges and closes the files; what is queued and not committed is dropped (it was not acknowledged). */
  close(): Promise<void> {
    return this.#index.close();
  }
}
