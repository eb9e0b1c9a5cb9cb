/**
 * The crawl database as its two files hold it, for readers beside or after a queue server (`petrel db
 * dump|check`, `petrel export`, `petrel search`, the benchmarks): the B-Tree (`crawldb.btree`) and
 * the insert log of records not swept into it yet (storage/insert-log.ts), opened read-only and
 * read as one map. Where a key is in both, the tree's record is the newer one.
 */
import { BTree } from '../btree/index.js';
import { InsertLog } from '../storage/insert-log.js';
import { urlHashHex, type UrlHash } from '../../shared/url-hash.js';

export class CrawlDbReader {
  readonly tree: BTree;
  readonly #log: InsertLog;

  private constructor(tree: BTree, log: InsertLog) {
    this.tree = tree;
    this.#log = log;
  }

  static open(path: string, options: { cachePages?: number } = {}): CrawlDbReader {
    const tree = BTree.open(path, { create: false, readOnly: true, cachePages: options.cachePages });
    try {
      return new CrawlDbReader(tree, InsertLog.open(path, { readOnly: true }));
    } catch (error) {
      tree.close();
      throw error;
    }
  }

  /** The record's bytes, or null. */
  get(key: Uint8Array): Uint8Array | null {
    return this.tree.get(key) ?? this.#log.read(key as UrlHash, urlHashHex(key));
  }

  /** Every record in key order, raw. */
  entries(): IterableIterator<[Uint8Array, Uint8Array]> {
    return mergedEntries(this.tree.entries(), this.#log);
  }

  /** Records in the insert log (some may be in the tree as well). */
  get loggedRecords(): number {
    return this.#log.size;
  }

  close(): void {
    try {
      this.#log.close();
    } finally {
      this.tree.close();
    }
  }
}

/** The tree's entries and the log's, in key order; a key in both is the tree's. Both inputs ascend. */
export function* mergedEntries(tree: Iterator<[Uint8Array, Uint8Array]>, log: InsertLog): IterableIterator<[Uint8Array, Uint8Array]> {
  const logged = log.size === 0 ? null : log.sorted();
  let fromTree = tree.next();
  let fromLog = logged?.next() ?? { done: true as const, value: undefined };
  while (fromTree.done !== true || fromLog.done !== true) {
    if (fromLog.done === true) {
      yield fromTree.value!;
      fromTree = tree.next();
      continue;
    }
    if (fromTree.done === true) {
      yield fromLog.value;
      fromLog = logged!.next();
      continue;
    }
    const order = Buffer.compare(fromTree.value[0], fromLog.value[0]);
    if (order <= 0) {
      yield fromTree.value;
      fromTree = tree.next();
      if (order === 0) fromLog = logged!.next();
    } else {
      yield fromLog.value;
      fromLog = logged!.next();
    }
  }
}
