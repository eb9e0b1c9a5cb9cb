/**
 * The page cache's pool of spare page buffers (btree/page-cache.ts): enough for the next commit of the
 * size of the last one, never fewer than a quarter of the capacity, never more than the capacity.
 */
import { describe, expect, it } from 'vitest';
import { PageCache } from '../../queue-server/btree/page-cache.js';

/** Hands `count` buffers back, then counts how many of them `take` returns before it allocates anew. */
function sparesKept(cache: PageCache, count: number): number {
  const given = new Set<Uint8Array>();
  for (let i = 0; i < count; i++) {
    const buffer = new Uint8Array(cache.pageSize);
    given.add(buffer);
    cache.give(buffer);
  }
  let kept = 0;
  while (given.has(cache.take())) kept++;
  return kept;
}

describe('PageCache spare buffers', () => {
  it('keeps as many as the last commit wrote, at least a quarter of the capacity', () => {
    const cache = new PageCache(64, 1024);
    expect(sparesKept(cache, 100)).toBe(16);
    cache.sizeSpareFor(40);
    expect(sparesKept(cache, 100)).toBe(40);
    cache.sizeSpareFor(3);
    expect(sparesKept(cache, 100)).toBe(16);
  });

  it('keeps no more than the capacity after a commit larger than the cache', () => {
    const cache = new PageCache(64, 1024);
    cache.sizeSpareFor(2186);
    expect(sparesKept(cache, 3000)).toBe(64);
  });
});
