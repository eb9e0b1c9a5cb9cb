/**
 * A B-Tree with a write stage in front: writes are staged in memory and reach the file together, in
 * one atomic B-Tree commit (two fsyncs), when `commit` is called; reads see staged writes first.
 * The cache-validator store and the crawl database are both built on it. Memory: the staged map,
 * bounded by one commit window's results, plus the tree's page cache.
 */
import { urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import { BTree } from '../btree/index.js';

export interface Codec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

export class StagedTree<T> {
  readonly #tree: BTree;
  readonly #codec: Codec<T>;
  /** hex hash -> value to write, or null to delete */
  readonly #staged = new Map<string, { hash: UrlHash; value: T | null }>();

  constructor(tree: BTree, codec: Codec<T>) {
    this.#tree = tree;
    this.#codec = codec;
  }

  protected static openTree(path: string, options: { pageSize?: number; cachePages?: number }): BTree {
    return BTree.open(path, { pageSize: options.pageSize, cachePages: options.cachePages ?? 2048 });
  }

  get(hash: UrlHash): T | null {
    const staged = this.#staged.get(urlHashHex(hash));
    if (staged !== undefined) return staged.value;
    return this.#tree.read(hash, this.#codec.decode);
  }

  stage(hash: UrlHash, value: T | null): void {
    this.#staged.set(urlHashHex(hash), { hash, value });
  }

  get stagedCount(): number {
    return this.#staged.size;
  }

  /** Writes every staged value in one atomic B-Tree commit. */
  commit(): void {
    if (this.#staged.size === 0) return;
    const staged = [...this.#staged.values()];
    this.#tree.write((batch) => {
      for (const { hash, value } of staged) {
        if (value === null) batch.delete(hash);
        else batch.put(hash, this.#codec.encode(value));
      }
    });
    this.#staged.clear();
  }

  /** Committed entries in key order (staged ones are not included: commit first). */
  *entries(): IterableIterator<[UrlHash, T]> {
    for (const [key, bytes] of this.#tree.entries()) yield [key as UrlHash, this.#codec.decode(bytes)];
  }

  stats(): ReturnType<BTree['stats']> {
    return this.#tree.stats();
  }

  check(): ReturnType<BTree['check']> {
    return this.#tree.check();
  }

  close(): void {
    this.commit();
    this.#tree.close();
  }
}
