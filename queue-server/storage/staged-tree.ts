/**
 * A B-Tree with a write stage in front: writes are staged in memory and reach the file together, in
 * one atomic B-Tree commit (two fsyncs), when `commit` is called; reads see staged writes first.
 * The cache-validator store and the crawl database are both built on it. Memory: the staged map,
 * bounded by one commit window's results, plus the tree's page cache.
 *
 * A commit that fails (a full disk, an I/O error) keeps the stage: the tree is brought back to its
 * durable state at once (`BTree.recover`, so reads go on) and the next `commit` writes the whole
 * stage again. Staged values are whole records, so writing them over either the previous commit or
 * the failed one (when its meta page reached the file) gives the same tree.
 */
import { urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import { BTree, BTreeError, type WriteBatch } from '../btree/index.js';
import type { FileOps } from './file-ops.js';

export interface StagedTreeOptions {
  readonly pageSize?: number;
  readonly cachePages?: number;
  /** Instead of `cachePages`: the cache's bound in bytes, at the file's own page size. */
  readonly cacheBytes?: number;
  readonly io?: FileOps;
}

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

  protected static openTree(path: string, options: StagedTreeOptions): BTree {
    return BTree.open(path, { pageSize: options.pageSize, cachePages: options.cachePages ?? 2048, cacheBytes: options.cacheBytes, io: options.io });
  }

  /** An existing tree for reading only (the CLI, beside or after a queue server). */
  protected static openReadOnly(path: string, options: { cachePages?: number }): BTree {
    return BTree.open(path, { create: false, readOnly: true, cachePages: options.cachePages ?? 2048 });
  }

  get(hash: UrlHash): T | null {
    const staged = this.#staged.get(urlHashHex(hash));
    if (staged !== undefined) return staged.value;
    return this.#tree.read(hash, this.#codec.decode);
  }

  /**
   * Which of `hashes` hold a value, staged or committed, `hashes` in ascending byte order: the stage
   * answers first (a staged delete is absent), the rest in one ordered pass over the tree
   * (BTree.hasSorted). No value is decoded.
   */
  hasSorted(hashes: readonly UrlHash[]): boolean[] {
    const found = new Array<boolean>(hashes.length).fill(false);
    const ask: UrlHash[] = [];
    const at: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const staged = this.#staged.size === 0 ? undefined : this.#staged.get(urlHashHex(hashes[i]!));
      if (staged !== undefined) found[i] = staged.value !== null;
      else {
        ask.push(hashes[i]!);
        at.push(i);
      }
    }
    if (ask.length > 0) {
      const inTree = this.#tree.hasSorted(ask);
      for (let j = 0; j < ask.length; j++) found[at[j]!] = inTree[j]!;
    }
    return found;
  }

  stage(hash: UrlHash, value: T | null): void {
    this.#staged.set(urlHashHex(hash), { hash, value });
  }

  get stagedCount(): number {
    return this.#staged.size;
  }

  /** Whether a write of the key (16 hex) waits for the next commit. */
  isStaged(hex: string): boolean {
    return this.#staged.has(hex);
  }

  /**
   * Writes every staged value in one atomic B-Tree commit; on failure the stage is kept for the next.
   * `alsoWrite`: more writes of the caller's in the same commit, after the staged ones.
   */
  commit(alsoWrite?: (batch: WriteBatch) => void): void {
    if (this.#staged.size === 0 && alsoWrite === undefined) return;
    // A recovery that failed last time (the file could not be read) is tried again first.
    if (this.#tree.failed) this.#tree.recover();
    const staged = [...this.#staged.values()];
    try {
      this.#tree.write((batch) => {
        for (const { hash, value } of staged) {
          if (value === null) batch.delete(hash);
          else batch.put(hash, this.#codec.encode(value));
        }
        alsoWrite?.(batch);
      });
    } catch (error) {
      recoverAfterFailedWrite(this.#tree, error);
      throw error;
    }
    this.#staged.clear();
  }

  /** Committed entries in key order (staged ones are not included: commit first). */
  *entries(): IterableIterator<[UrlHash, T]> {
    for (const [key, bytes] of this.#tree.entries()) yield [key as UrlHash, this.#codec.decode(bytes)];
  }

  /** Committed entries in key order from `from` (inclusive) on, raw: for range reads that stop early and keep their own stage. */
  committedFrom(from: Uint8Array): IterableIterator<[Uint8Array, Uint8Array]> {
    return this.#tree.entries({ from });
  }

  /** Every committed entry in key order as views valid only during `visit` (BTree.forEachEntry): a whole pass without copies. */
  forEachCommitted(visit: (key: Uint8Array, value: Uint8Array) => void): number {
    return this.#tree.forEachEntry(visit);
  }

  stats(): ReturnType<BTree['stats']> {
    return this.#tree.stats();
  }

  check(): ReturnType<BTree['check']> {
    return this.#tree.check();
  }

  /** Commits what is staged, then closes the file (closed even when the commit fails, which throws). */
  close(): void {
    try {
      this.commit();
    } finally {
      this.#tree.close();
    }
  }
}

/**
 * After a write the file system failed (BTREE_IO), the tree is brought back to its last commit so that
 * the next commit can try again; if that fails too, the next commit tries again, and the write's own
 * error is the one the caller reports. Other errors leave the tree as it is.
 */
export function recoverAfterFailedWrite(tree: BTree, error: unknown): void {
  if (!(error instanceof BTreeError) || error.code !== 'BTREE_IO') return;
  try {
    tree.recover();
  } catch {
    // Still failed: see above.
  }
}
