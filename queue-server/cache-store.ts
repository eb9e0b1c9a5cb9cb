/**
 * The cache-validator store: one B-Tree (`cache.btree`) keyed by URL hash, holding a CacheRecord per
 * URL. Writes are staged in memory and committed together (one B-Tree commit, two fsyncs) by
 * `commit`, which the crawl service calls once per group of result batches; reads see staged writes.
 * Memory: the staged map (bounded by one commit window's results) plus the tree's page cache.
 */
import type { UrlHash } from '../shared/url-hash.js';
import { BTree } from './btree/index.js';
import { decodeCacheRecord, encodeCacheRecord, type CacheRecord } from './cache-record.js';

export class CacheStore {
  readonly #tree: BTree;
  /** hex hash -> record to write, or null to delete */
  readonly #staged = new Map<string, { hash: UrlHash; record: CacheRecord | null }>();

  private constructor(tree: BTree) {
    this.#tree = tree;
  }

  static open(path: string, options: { cachePages?: number } = {}): CacheStore {
    return new CacheStore(BTree.open(path, { cachePages: options.cachePages ?? 2048 }));
  }

  get(hash: UrlHash): CacheRecord | null {
    const staged = this.#staged.get(hexOf(hash));
    if (staged !== undefined) return staged.record;
    const bytes = this.#tree.get(hash);
    return bytes === null ? null : decodeCacheRecord(bytes);
  }

  stage(hash: UrlHash, record: CacheRecord | null): void {
    this.#staged.set(hexOf(hash), { hash, record });
  }

  get stagedCount(): number {
    return this.#staged.size;
  }

  /** Writes every staged record in one atomic B-Tree commit. */
  commit(): void {
    if (this.#staged.size === 0) return;
    const staged = [...this.#staged.values()];
    this.#tree.write((batch) => {
      for (const { hash, record } of staged) {
        if (record === null) batch.delete(hash);
        else batch.put(hash, encodeCacheRecord(record));
      }
    });
    this.#staged.clear();
  }

  stats(): ReturnType<BTree['stats']> {
    return this.#tree.stats();
  }

  close(): void {
    this.commit();
    this.#tree.close();
  }
}

function hexOf(hash: UrlHash): string {
  return Buffer.from(hash.buffer, hash.byteOffset, 8).toString('hex');
}
