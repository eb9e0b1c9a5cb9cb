/**
 * BTree: the public face of the engine. A persistent, crash-safe ordered map from 8-byte keys (raw
 * big-endian xxHash64 of a URL) to byte-string values, in one file.
 *
 *   const tree = BTree.open('frontier.btree');
 *   tree.put(key, value);                          // one commit
 *   tree.write((b) => { b.put(k1, v1); b.delete(k2); });   // one atomic commit
 *   for (const [k, v] of tree.entries({ from })) ...
 *
 * Every write is a commit (two fsyncs): after `put`, `delete` or `write` returns, the change survives a
 * crash; if it throws, nothing of it was written. Batch with `write` when throughput matters.
 *
 * Reading the source, in order: LAYOUT.md (bytes and crash model), page-codec.ts (bytes <-> records),
 * node.ts (split/merge), write-txn.ts (copy-on-write edits), pager.ts (`commit`, the four steps).
 */
import { BTreeError, inFile } from './errors.js';
import { checkTree, type CheckReport } from './check.js';
import { Cursor, lookup, lookupSorted, lookupSortedWith, lookupWith, walkEntries } from './cursor.js';
import { compareKeys, copyKey, keyToHex, viewKey, type PageId, type UrlKey } from './keys.js';
import type { BTNode } from './node.js';
import { DEFAULT_PAGE_SIZE, isValidPageSize, maxValueBytes } from './page-codec.js';
import type { FileOps } from '../storage/file-ops.js';
import { Pager } from './pager.js';
import { WriteTxn } from './write-txn.js';

export interface BTreeOpenOptions {
  /** Page size in bytes for a new file: a power of two from 1024 to 65536 (default 4096). An existing
   * file keeps the page size recorded in its meta page. */
  readonly pageSize?: number;
  /** Decoded pages kept in the LRU cache (default 1024, at least 1). */
  readonly cachePages?: number;
  /** Instead of `cachePages`: the cache's bound in bytes, whatever page size the file has (at least 16 pages). */
  readonly cacheBytes?: number;
  /** Create the file if it does not exist (default true). */
  readonly create?: boolean;
  /** Open without write access; writes throw `BTREE_READ_ONLY` (default false). */
  readonly readOnly?: boolean;
  /** The file operations (default node:fs); tests interpose on them to inject faults. */
  readonly io?: FileOps;
}

export interface BTreeStats {
  readonly keys: number;
  /** 0 when empty, 1 when the root is a leaf. */
  readonly height: number;
  /** High-water mark in pages, the two meta pages included. */
  readonly pages: number;
  readonly freePages: number;
  readonly fileBytes: number;
  readonly pageSize: number;
  readonly cacheHits: number;
  readonly cacheMisses: number;
  /** Pages in the cache now; never more than `cacheCapacity`. */
  readonly cachePages: number;
  readonly cacheCapacity: number;
  /** Id of the last durable commit (0 for a new file). */
  readonly txid: number;
  /** The owner's number committed with the entries (WriteBatch.setStamp; 0 until set). */
  readonly stamp: number;
  /** Longest value `put` accepts at this page size. */
  readonly maxValueBytes: number;
}

/** Operations inside `BTree.write`. Reads see the batch's own earlier writes. */
export interface WriteBatch {
  put(key: Uint8Array, value: Uint8Array): void;
  /** Returns whether the key was present (as seen by this batch). */
  delete(key: Uint8Array): boolean;
  get(key: Uint8Array): Uint8Array | null;
  /**
   * Puts each entry whose key is absent (as seen by this batch), leaving present keys as they are;
   * keys in ascending order, each once (BTREE_KEY_INVALID otherwise). Returns how many were put. A
   * leaf's run of keys is merged in one pass: for batches of sorted new keys.
   */
  insertAbsentSorted(entries: ReadonlyArray<readonly [Uint8Array, Uint8Array]>): number;
  /** Sets the number the commit writes in the meta beside the entries (`BTree.stamp`). */
  setStamp(stamp: number): void;
}

export interface EntriesOptions {
  /** First key to return, inclusive; default: the smallest key. */
  readonly from?: Uint8Array;
}

export class BTree {
  readonly #pager: Pager;
  readonly #maxValue: number;
  readonly #readNode: (id: PageId) => BTNode;
  #closed = false;
  #writing = false;
  /** forEachEntry walks on now: their views are into committed pages, which a commit could free. */
  #walks = 0;

  private constructor(pager: Pager) {
    this.#pager = pager;
    this.#maxValue = maxValueBytes(pager.pageSize);
    this.#readNode = (id) => pager.readNode(id);
  }

  static open(path: string, options: BTreeOpenOptions = {}): BTree {
    const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    const cachePages = options.cachePages ?? 1024;
    if (!isValidPageSize(pageSize)) {
      throw new BTreeError('BTREE_BAD_OPTION', `pageSize must be a power of two from 1024 to 65536, got ${pageSize}`);
    }
    if (!Number.isInteger(cachePages) || cachePages < 1) {
      throw new BTreeError('BTREE_BAD_OPTION', `cachePages must be a positive integer, got ${cachePages}`);
    }
    if (options.cacheBytes !== undefined && (!Number.isInteger(options.cacheBytes) || options.cacheBytes < 1)) {
      throw new BTreeError('BTREE_BAD_OPTION', `cacheBytes must be a positive integer, got ${options.cacheBytes}`);
    }
    let pager: Pager;
    try {
      pager = Pager.open(path, {
        pageSize,
        cachePages,
        cacheBytes: options.cacheBytes,
        create: options.create ?? true,
        readOnly: options.readOnly ?? false,
        io: options.io,
      });
    } catch (error) {
      throw inFile(error, path);
    }
    return new BTree(pager);
  }

  /** The value stored under `key` (a copy), or null. Reads the last commit. */
  get(key: Uint8Array): Uint8Array | null {
    const pager = this.#pagerOpen();
    return lookup(pager.meta.root, viewKey(key), this.#readNode);
  }

  /**
   * The value stored under `key`, handed to `decode` as a view into its page instead of a copy, and
   * what `decode` returns; null when absent. The view is valid only during the call (it must not be
   * kept, and `decode` must not use the tree): for readers that turn the bytes into something else at
   * once, so that no copy is made.
   */
  read<T>(key: Uint8Array, decode: (value: Uint8Array) => T): T | null {
    const pager = this.#pagerOpen();
    return lookupWith(pager.meta.root, viewKey(key), this.#readNode, decode);
  }

  /**
   * Which of `keys` are stored (the last commit), `keys` in ascending order (compareKeys): one ordered
   * pass over the leaves (cursor.ts `lookupSorted`). Throws BTREE_KEY_INVALID for keys out of order,
   * which would make the pass skip leaves.
   */
  hasSorted(keys: readonly Uint8Array[]): boolean[] {
    const pager = this.#pagerOpen();
    checkAscending(keys, 'hasSorted');
    return lookupSorted(pager.meta.root, keys, this.#readNode);
  }

  /**
   * The values of `keys` (ascending, as for `hasSorted`) in one ordered pass, each handed to `use` as a
   * view into its page (null when absent), valid only during the call; `use` must not use the tree.
   */
  readSorted(keys: readonly Uint8Array[], use: (index: number, value: Uint8Array | null) => void): void {
    const pager = this.#pagerOpen();
    checkAscending(keys, 'readSorted');
    lookupSortedWith(pager.meta.root, keys, this.#readNode, use);
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.write((batch) => batch.put(key, value));
  }

  delete(key: Uint8Array): boolean {
    let found = false;
    this.write((batch) => {
      found = batch.delete(key);
    });
    return found;
  }

  /**
   * Runs `fn` and commits everything it did as one transaction. If `fn` throws, nothing is written and the
   * error propagates. `fn` must be synchronous; returning a promise aborts with `BTREE_TXN_MISUSE`.
   * Memory: every page the batch touches stays in memory until the commit (about one page per distinct
   * leaf written, plus the branches above them), so split very large imports into several batches.
   */
  write(fn: (batch: WriteBatch) => void): void {
    const pager = this.#pagerOpen();
    if (this.#writing) throw new BTreeError('BTREE_TXN_MISUSE', 'write() called inside another write');
    if (this.#walks > 0) throw new BTreeError('BTREE_TXN_MISUSE', 'write() called inside forEachEntry()');
    const txn = new WriteTxn(pager);
    this.#writing = true;
    let live = true;
    const guard = (): void => {
      if (!live) throw new BTreeError('BTREE_TXN_MISUSE', 'batch used after its write() returned');
    };
    const batch: WriteBatch = {
      put: (key, value) => {
        guard();
        // Both are copied into the page at once (node.ts), so the caller may reuse its buffers.
        txn.put(viewKey(key), this.#acceptValue(key, value));
      },
      delete: (key) => {
        guard();
        return txn.delete(viewKey(key));
      },
      get: (key) => {
        guard();
        return txn.get(viewKey(key));
      },
      insertAbsentSorted: (entries) => {
        guard();
        const checked = entries.map(([key, value], i): readonly [UrlKey, Uint8Array] => {
          const at = viewKey(key);
          if (i > 0 && compareKeys(entries[i - 1]![0], at) >= 0) throw new BTreeError('BTREE_KEY_INVALID', `insertAbsentSorted: key ${keyToHex(at)} at ${i} is not above the one before it`);
          return [at, this.#acceptValue(key, value)];
        });
        return txn.insertAbsentSorted(checked);
      },
      setStamp: (stamp) => {
        guard();
        txn.setStamp(stamp);
      },
    };
    try {
      const result: unknown = fn(batch);
      if (typeof (result as { then?: unknown } | null | undefined)?.then === 'function') {
        throw new BTreeError('BTREE_TXN_MISUSE', 'write() callback returned a promise; it must be synchronous');
      }
      live = false;
      if (txn.changed) {
        pager.commit({ dirty: txn.dirtyNodes, root: txn.root, height: txn.height, keyCount: txn.keyCount, stamp: txn.stamp });
      } else {
        pager.rollback();
      }
    } catch (err) {
      pager.rollback();
      throw err;
    } finally {
      live = false;
      this.#writing = false;
    }
  }

  /**
   * After a write failed with `BTREE_IO`: re-reads the durable state from the file (the last commit that
   * reached it, possibly the failed one if its meta page got written) and accepts work again, as a
   * reopen would. The failed batch is not in memory any more: write it again.
   */
  recover(): void {
    if (this.#closed) throw new BTreeError('BTREE_CLOSED', `B-tree ${this.#pager.path} is closed`);
    this.#pager.recover();
  }

  /** True after a write failed with `BTREE_IO`, until `recover()`. */
  get failed(): boolean {
    return this.#pager.failed;
  }

  /** Entries in unsigned byte order of their keys, from `options.from` inclusive. See cursor.ts for how
   * the iterator behaves across commits made while it is open. Keys and values are copies. */
  entries(options: EntriesOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    const from: UrlKey | null = options.from === undefined ? null : copyKey(options.from);
    this.#pagerOpen();
    return new Cursor(
      {
        view: () => {
          const meta = this.#pagerOpen().meta;
          return { txid: meta.txid, root: meta.root };
        },
        readNode: (id) => this.#pagerOpen().readNode(id),
      },
      from,
    );
  }

  /**
   * Every entry of the last commit in key order, handed to `visit` as views into its page instead of
   * copies (valid only during the call: copy what is kept); returns how many. For a pass over the whole
   * tree that turns each entry into something else at once. `visit` may read the tree, not write it
   * (BTREE_TXN_MISUSE).
   */
  forEachEntry(visit: (key: Uint8Array, value: Uint8Array) => void): number {
    const pager = this.#pagerOpen();
    this.#walks++;
    try {
      return walkEntries(pager.meta.root, this.#readNode, visit);
    } finally {
      this.#walks--;
    }
  }

  stats(): BTreeStats {
    const pager = this.#pagerOpen();
    const meta = pager.meta;
    const cache = pager.cache;
    return {
      keys: meta.keyCount,
      height: meta.height,
      pages: meta.pageCount,
      freePages: meta.freeCount,
      fileBytes: pager.fileBytes(),
      pageSize: meta.pageSize,
      cacheHits: cache.hits,
      cacheMisses: cache.misses,
      cachePages: cache.size,
      cacheCapacity: cache.capacity,
      txid: meta.txid,
      stamp: meta.stamp,
      maxValueBytes: this.#maxValue,
    };
  }

  /** Verifies the durable file: checksums, order, balance, fill, page accounting, counters. */
  check(): CheckReport {
    return checkTree(this.#pagerOpen());
  }

  close(): void {
    if (this.#closed) return;
    if (this.#writing) throw new BTreeError('BTREE_TXN_MISUSE', 'close() called inside write()');
    this.#closed = true;
    this.#pager.close();
  }

  #pagerOpen(): Pager {
    if (this.#closed) throw new BTreeError('BTREE_CLOSED', `B-tree ${this.#pager.path} is closed`);
    this.#pager.assertUsable();
    return this.#pager;
  }

  #acceptValue(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (!(value instanceof Uint8Array)) {
      throw new BTreeError('BTREE_VALUE_TOO_LARGE', `value for key ${keyToHex(key)} is not a Uint8Array`);
    }
    if (value.length > this.#maxValue) {
      throw new BTreeError(
        'BTREE_VALUE_TOO_LARGE',
        `value for key ${keyToHex(key)} has ${value.length} bytes; max at page size ${this.#pager.pageSize} is ${this.#maxValue}`,
      );
    }
    return value;
  }
}

/** Keys of an ordered pass must be valid and ascending (ties allowed): out of order, the pass would skip leaves. */
function checkAscending(keys: readonly Uint8Array[], operation: string): void {
  for (let i = 0; i < keys.length; i++) {
    const key = viewKey(keys[i]);
    if (i > 0 && compareKeys(keys[i - 1]!, key) > 0) throw new BTreeError('BTREE_KEY_INVALID', `${operation}: key ${keyToHex(key)} at ${i} is smaller than the one before it`);
  }
}
