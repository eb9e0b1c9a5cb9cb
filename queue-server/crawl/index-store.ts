/**
 * The search index as one of the crawl's stores: changes decided while results are applied
 * (index-change.ts) are staged here and made durable by the group commit (Crawl.commit), like every
 * other store's, so an acknowledged result is searchable. (Staging writes only when the index's
 * staging buffer passes its bound, 32 MiB: then a segment record in the commit log that the next
 * commit's COMMIT record covers. The commit is one append and one fdatasync of that log.)
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
import { errnoCodeOf } from './storage-error.js';
import { SearchIndex, type IndexChange, type SearchIndexOptions } from '../search/search-index.js';

export class IndexStore {
  readonly #dir: string;
  readonly #options: SearchIndexOptions;
  #index: SearchIndex;
  /** Changes not yet in a successful commit, in the order they were decided (kept for a retry). */
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

  /**
   * Stages a change for the next commit (a later change of the same URL replaces it there). It goes into
   * the index's staging buffer at once, so the work is spread over the posts instead of lengthening the
   * group commit (claims wait less); it is also kept here until the commit, for a retry. A failure (the
   * buffer's segment file could not be written) is not thrown: the commit reopens the index and stages
   * everything again, and fails itself if the disk still does.
   */
  stage(change: IndexChange): void {
    this.#queued.push(change);
    if (!this.#failed) this.#stageOne(change);
  }

  #stageOne(change: IndexChange): void {
    try {
      this.#index.stage(change);
    } catch (error) {
      if ((error as IndexError).code === 'INDEX_BAD_DATA') {
        this.refused++;
        return;
      }
      this.#failed = true;
      this.#stageError = error;
    }
  }

  /** Why staging failed (a write error with its errno), thrown by the commit that finds it so. */
  #stageError: unknown = null;

  /** Commits the index has made since it was created (SearchIndex.commits). */
  get commits(): number {
    return this.#index.commits;
  }

  get queued(): number {
    return this.#queued.length;
  }

  /** Writes the queued changes and commits the index; on failure keeps them for the next call and throws. */
  commit(): void {
    if (this.#queued.length === 0 && !this.#failed) return;
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.#failed) this.#reopen();
        this.#index.commit();
        break;
      } catch (error) {
        this.#failed = true;
        // An index a failed merge install left broken refuses with no errno of its own (INDEX_IO, "failed
        // earlier"): that is no failure of this commit's writes, so reopen and try once more at once.
        if (attempt === 0 && (error as IndexError).code === 'INDEX_IO' && errnoCodeOf(error) === null) continue;
        throw error;
      }
    }
    this.#queued = [];
  }

  /** A new handle on the last manifest, with every queued change staged again; throws the write error if staging fails again. */
  #reopen(): void {
    // What the failed attempt staged or wrote is dropped with the old handle (orphan files are removed on open).
    void this.#index.close();
    this.#index = SearchIndex.open(this.#dir, this.#options);
    this.#failed = false;
    for (const change of this.#queued) {
      this.#stageOne(change);
      // The disk still fails: this attempt fails with the write's own error (a CommitFailure of index/).
      if (this.#failed) throw this.#stageError;
    }
  }

  /** Stops merges and closes the files; what is queued and not committed is dropped (it was not acknowledged). */
  close(): Promise<void> {
    return this.#index.close();
  }
}
