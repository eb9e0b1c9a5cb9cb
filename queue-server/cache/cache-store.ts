/**
 * The cache-validator store: one B-Tree (`cache.btree`, 4 KiB pages) keyed by URL hash, holding a
 * CacheRecord per URL, written through a stage and committed once per group of result batches.
 */
import { decodeCacheRecord, encodeCacheRecord, type CacheRecord } from './cache-record.js';
import { StagedTree, type StagedTreeOptions } from '../storage/staged-tree.js';

export class CacheStore extends StagedTree<CacheRecord> {
  static open(path: string, options: Pick<StagedTreeOptions, 'cachePages' | 'io'> = {}): CacheStore {
    return new CacheStore(StagedTree.openTree(path, options), { encode: encodeCacheRecord, decode: decodeCacheRecord });
  }
}
