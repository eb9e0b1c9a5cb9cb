import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BTree, BTreeError, maxValueBytes } from '../../queue-server/btree/index.js';
import { STAGING_BYTES } from '../../queue-server/storage/staging-buffer.js';
import { dump, expectClean, hex, key, prng, tempFile, text } from '../support/btree-helpers.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof BTreeError ? err.code : `not a BTreeError: ${String(err)}`;
  }
  return undefined;
}

describe('BTree basics', () => {
  it('stores, overwrites, deletes and reads back values, and survives reopen', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    expect(tree.get(key(1))).toBeNull();
    tree.put(key(1), text('one'));
    tree.put(key(2), text('two'));
    tree.put(key(1), text('uno'));
    expect(tree.get(key(1))).toEqual(text('uno'));
    expect(tree.delete(key(2))).toBe(true);
    expect(tree.delete(key(2))).toBe(false);
    expect(tree.stats()).toMatchObject({ keys: 1, height: 1, txid: 4, pageSize: 4096 });
    tree.close();

    const again = BTree.open(file, { create: false });
    expect(again.get(key(1))).toEqual(text('uno'));
    expect(again.get(key(2))).toBeNull();
    expectClean(again);
    again.close();
  });

  it('hands out copies: mutating a returned or passed-in buffer does not change the tree', () => {
    const tree = BTree.open(tempFile());
    const k = key(7);
    const v = text('value');
    tree.put(k, v);
    v[0] = 0;
    k[7] = 8;
    const got = tree.get(key(7))!;
    expect(got).toEqual(text('value'));
    got[0] = 0;
    expect(tree.get(key(7))).toEqual(text('value'));
    tree.close();
  });

  it('read hands the stored bytes to a decoder without copying them and returns what it made, or null', () => {
    const tree = BTree.open(tempFile(), { pageSize: 1024, cachePages: 2 });
    tree.write((b) => {
      for (let i = 0; i < 400; i++) b.put(key(i), text(`value ${i}`));
    });
    for (let i = 0; i < 400; i += 7) {
      expect(tree.read(key(i), (bytes) => new TextDecoder().decode(bytes))).toBe(`value ${i}`);
      // A view into the cached page (not a copy of its own), matching what get copies out.
      expect(tree.read(key(i), (bytes) => bytes.byteLength < bytes.buffer.byteLength)).toBe(true);
      expect(tree.read(key(i), (bytes) => hex(bytes))).toBe(hex(tree.get(key(i))!));
    }
    expect(tree.read(key(1000), () => 'called')).toBeNull();
    expectClean(tree);
    tree.close();
  });

  it('iterates correctly while other reads evict the cursor\'s leaf from a two-page cache (the cursor holds no page between steps)', () => {
    const file = tempFile();
    const tree = BTree.open(file, { pageSize: 1024, cachePages: 2 });
    tree.write((b) => {
      for (let i = 0; i < 600; i++) b.put(key(i), text(`value ${i} ${'x'.repeat(i % 40)}`));
    });
    const random = prng(7);
    const seen: string[] = [];
    for (const [k, v] of tree.entries({ from: key(100) })) {
      seen.push(`${hex(k)}=${new TextDecoder().decode(v)}`);
      // Reads elsewhere in the tree between steps: the cursor's leaf is evicted and its buffer reused.
      for (let r = 0; r < 3; r++) tree.get(key(Math.floor(random() * 600)));
    }
    expect(seen).toEqual(Array.from({ length: 500 }, (_, n) => `${hex(key(n + 100))}=value ${n + 100} ${'x'.repeat((n + 100) % 40)}`));
    expectClean(tree);
    tree.close();
  });

  it('iterates in unsigned byte order: keys with the high bit set sort after low ones', () => {
    const tree = BTree.open(tempFile());
    const keys = [0xff00000000000000n, 0x8000000000000000n, 0x7fffffffffffffffn, 0n, 1n, 0x00ff000000000000n];
    tree.write((b) => {
      for (const k of keys) b.put(key(k), text(k.toString(16)));
    });
    const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((k) => hex(key(k)));
    expect([...tree.entries()].map(([k]) => hex(k))).toEqual(sorted);
    // `from` is inclusive, and may name a key that is absent.
    expect([...tree.entries({ from: key(0x8000000000000000n) })].map(([k]) => hex(k))).toEqual(sorted.slice(4));
    expect([...tree.entries({ from: key(0x8000000000000001n) })].map(([k]) => hex(k))).toEqual(sorted.slice(5));
    expect([...tree.entries({ from: key(0xffffffffffffffffn) })]).toEqual([]);
    expectClean(tree);
    tree.close();
  });

  it('grows to several levels and shrinks back to empty, staying balanced and consistent', () => {
    const file = tempFile();
    const tree = BTree.open(file, { pageSize: 1024, cachePages: 64 });
    const rand = prng(42);
    const n = 4000;
    const order = Array.from({ length: n }, (_, i) => i).sort(() => rand() - 0.5);
    for (let i = 0; i < n; i += 200) {
      tree.write((b) => {
        for (const k of order.slice(i, i + 200)) b.put(key(k * 7919), new Uint8Array(k % 120).fill(k & 0xff));
      });
    }
    expect(tree.stats().height).toBeGreaterThanOrEqual(3);
    expect(tree.stats().keys).toBe(n);
    expectClean(tree);
    const keysInOrder = [...tree.entries()].map(([k]) => new DataView(k.buffer).getBigUint64(0));
    expect(keysInOrder).toEqual(Array.from({ length: n }, (_, i) => BigInt(i * 7919)));

    for (let i = 0; i < n; i += 250) {
      tree.write((b) => {
        for (const k of order.slice(i, i + 250)) expect(b.delete(key(k * 7919))).toBe(true);
      });
      if (i % 1000 === 0) expectClean(tree);
    }
    expect(tree.stats()).toMatchObject({ keys: 0, height: 0 });
    expectClean(tree);
    tree.close();
  });

  it('commits a batch atomically; a throw inside the callback writes nothing', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    tree.write((b) => {
      b.put(key(1), text('a'));
      b.put(key(2), text('b'));
      expect(b.get(key(2))).toEqual(text('b'));
    });
    const before = tree.stats().txid;
    expect(() =>
      tree.write((b) => {
        b.put(key(3), text('c'));
        b.delete(key(1));
        throw new Error('changed my mind');
      }),
    ).toThrow('changed my mind');
    expect(tree.stats().txid).toBe(before);
    expect(dump(tree)).toEqual(new Map([[hex(key(1)), hex(text('a'))], [hex(key(2)), hex(text('b'))]]));
    tree.close();
    const again = BTree.open(file);
    expect(again.stats().txid).toBe(before);
    expect(again.get(key(3))).toBeNull();
    expectClean(again);
    again.close();
  });

  it('writes a commit larger than the staging buffer (runs of more pages than one write joins) and reads it all back', () => {
    const file = tempFile();
    const tree = BTree.open(file, { pageSize: 16384 });
    const value = (n: number) => text(`value ${n} `.padEnd(200, String(n % 10)));
    tree.write((b) => {
      for (let n = 0; n < 20_000; n++) b.put(key(n), value(n));
    });
    // 20,000 values of 200 bytes fill some 300 pages of 16 KiB, written past the end of a new file:
    // consecutive ids, several times the 64 pages one write call joins.
    expect(tree.stats().pages * 16384).toBeGreaterThan(4 * STAGING_BYTES);
    tree.close();
    const again = BTree.open(file, { create: false });
    for (let n = 0; n < 20_000; n++) expect(again.get(key(n))).toEqual(value(n));
    expectClean(again);
    again.close();
  });

  it('does not commit a batch that changed nothing', () => {
    const tree = BTree.open(tempFile());
    tree.put(key(1), text('a'));
    expect(tree.delete(key(9))).toBe(false);
    tree.write(() => {});
    expect(tree.stats().txid).toBe(1);
    tree.close();
  });

  it('commits the owner\'s stamp in the meta with the entries: kept on reopen, a change alone is a commit, a thrown batch keeps the old one', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    expect(tree.stats().stamp).toBe(0);
    tree.write((b) => {
      b.put(key(1), text('a'));
      b.setStamp(41);
    });
    expect(tree.stats()).toMatchObject({ stamp: 41, txid: 1 });
    tree.write((b) => b.setStamp(2 ** 40 + 5));
    expect(tree.stats()).toMatchObject({ stamp: 2 ** 40 + 5, txid: 2 });
    tree.write((b) => b.setStamp(2 ** 40 + 5));
    expect(tree.stats().txid).toBe(2);
    expect(() =>
      tree.write((b) => {
        b.setStamp(7);
        throw new Error('changed my mind');
      }),
    ).toThrow('changed my mind');
    expect(tree.stats().stamp).toBe(2 ** 40 + 5);
    tree.close();
    const again = BTree.open(file, { create: false });
    expect(again.stats()).toMatchObject({ stamp: 2 ** 40 + 5, txid: 2, keys: 1 });
    expectClean(again);
    again.close();
  });

  it('rejects values over the page-size maximum with BTREE_VALUE_TOO_LARGE, and aborts the whole batch', () => {
    for (const pageSize of [1024, 4096, 65536]) {
      const tree = BTree.open(tempFile(), { pageSize });
      const max = maxValueBytes(pageSize);
      expect(tree.stats().maxValueBytes).toBe(max);
      tree.put(key(1), new Uint8Array(max).fill(1));
      expect(codeOf(() => tree.put(key(2), new Uint8Array(max + 1)))).toBe('BTREE_VALUE_TOO_LARGE');
      expect(
        codeOf(() =>
          tree.write((b) => {
            b.put(key(3), text('small'));
            b.put(key(4), new Uint8Array(max + 1));
          }),
        ),
      ).toBe('BTREE_VALUE_TOO_LARGE');
      expect(tree.get(key(3))).toBeNull();
      // Many maximum-size values still split cleanly.
      tree.write((b) => {
        for (let i = 10; i < 60; i++) b.put(key(i), new Uint8Array(max).fill(i));
      });
      expectClean(tree);
      tree.close();
    }
    expect([1024, 4096, 16384, 65536].map(maxValueBytes)).toEqual([242, 1010, 4082, 16370]);
  });

  it('rejects malformed keys and options with stable codes', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    expect(codeOf(() => tree.put(new Uint8Array(7), text('x')))).toBe('BTREE_KEY_INVALID');
    expect(codeOf(() => tree.get(new Uint8Array(9)))).toBe('BTREE_KEY_INVALID');
    expect(codeOf(() => tree.entries({ from: new Uint8Array(0) }))).toBe('BTREE_KEY_INVALID');
    tree.close();
    expect(codeOf(() => BTree.open(tempFile(), { pageSize: 3000 }))).toBe('BTREE_BAD_OPTION');
    expect(codeOf(() => BTree.open(tempFile(), { pageSize: 512 }))).toBe('BTREE_BAD_OPTION');
    expect(codeOf(() => BTree.open(tempFile(), { cachePages: 0 }))).toBe('BTREE_BAD_OPTION');
    expect(codeOf(() => BTree.open(tempFile(), { cacheBytes: 0 }))).toBe('BTREE_BAD_OPTION');
    expect(codeOf(() => BTree.open(tempFile(), { create: false }))).toBe('BTREE_NOT_FOUND');
  });

  it('sizes its cache by bytes at the page size the file has, whatever size a new file would get', () => {
    const file = tempFile();
    BTree.open(file, { pageSize: 16 * 1024 }).close();
    const old = BTree.open(file, { pageSize: 4096, cacheBytes: 4 * 1024 * 1024 });
    const fresh = BTree.open(tempFile(), { pageSize: 4096, cacheBytes: 4 * 1024 * 1024 });
    const tiny = BTree.open(tempFile(), { pageSize: 4096, cacheBytes: 1 });
    expect(old.stats()).toMatchObject({ pageSize: 16 * 1024, cacheCapacity: 256 });
    expect(fresh.stats()).toMatchObject({ pageSize: 4096, cacheCapacity: 1024 });
    expect(tiny.stats().cacheCapacity).toBe(16);
    for (const tree of [old, fresh, tiny]) tree.close();
  });

  it('refuses misuse: nested writes, async callbacks, a batch kept after write, closed and read-only handles', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    expect(codeOf(() => tree.write(() => tree.put(key(1), text('x'))))).toBe('BTREE_TXN_MISUSE');
    expect(codeOf(() => tree.write((async () => {}) as unknown as () => void))).toBe('BTREE_TXN_MISUSE');
    let kept: { put(k: Uint8Array, v: Uint8Array): void } | null = null;
    tree.write((b) => {
      kept = b;
    });
    expect(codeOf(() => kept!.put(key(1), text('x')))).toBe('BTREE_TXN_MISUSE');
    tree.put(key(1), text('x'));
    const open = tree.entries();
    tree.close();
    expect(codeOf(() => tree.get(key(1)))).toBe('BTREE_CLOSED');
    expect(codeOf(() => tree.entries())).toBe('BTREE_CLOSED');
    expect(codeOf(() => open.next())).toBe('BTREE_CLOSED');
    expect(codeOf(() => tree.stats())).toBe('BTREE_CLOSED');
    tree.close();
    const empty = BTree.open(tempFile());
    empty.close();
    expect(codeOf(() => empty.get(key(1)))).toBe('BTREE_CLOSED');

    const ro = BTree.open(file, { readOnly: true });
    expect(ro.get(key(1))).toEqual(text('x'));
    expect(codeOf(() => ro.put(key(2), text('y')))).toBe('BTREE_READ_ONLY');
    expectClean(ro);
    ro.close();
  });

  it('reopening with a different page size uses the stored one', () => {
    const file = tempFile();
    const tree = BTree.open(file, { pageSize: 2048 });
    tree.put(key(1), text('a'));
    tree.close();
    const again = BTree.open(file, { pageSize: 8192 });
    expect(again.stats().pageSize).toBe(2048);
    expect(again.get(key(1))).toEqual(text('a'));
    again.put(key(2), text('b'));
    expectClean(again);
    again.close();
    expect(fs.statSync(file).size % 2048).toBe(0);
  });

  it('keeps the page cache within cachePages and counts hits and misses', () => {
    const file = tempFile();
    const tree = BTree.open(file, { pageSize: 1024, cachePages: 8 });
    for (let i = 0; i < 2000; i += 100) {
      tree.write((b) => {
        for (let j = i; j < i + 100; j++) b.put(key(j * 104729), new Uint8Array(40).fill(j & 0xff));
      });
      expect(tree.stats().cachePages).toBeLessThanOrEqual(8);
    }
    for (let j = 0; j < 2000; j++) {
      expect(tree.get(key(j * 104729))).toEqual(new Uint8Array(40).fill(j & 0xff));
      expect(tree.stats().cachePages).toBeLessThanOrEqual(8);
    }
    const small = tree.stats();
    expect(small.cacheCapacity).toBe(8);
    expect(small.cacheHits).toBeGreaterThan(0);
    expect(small.cacheMisses).toBeGreaterThan(0);
    tree.close();

    // With room for every page, a second pass over the keys is served entirely from memory.
    const big = BTree.open(file, { cachePages: 10_000 });
    for (let j = 0; j < 2000; j++) big.get(key(j * 104729));
    const missesAfterFirstPass = big.stats().cacheMisses;
    expect(missesAfterFirstPass).toBeLessThanOrEqual(big.stats().pages);
    for (let j = 0; j < 2000; j++) big.get(key(j * 104729));
    expect(big.stats().cacheMisses).toBe(missesAfterFirstPass);
    big.close();
  });

  it('reuses freed pages: rewriting the same 5,000 keys 20 times leaves the file size flat', () => {
    const file = tempFile();
    const tree = BTree.open(file);
    const sizes: number[] = [];
    for (let round = 0; round < 20; round++) {
      for (let start = 0; start < 5000; start += 1000) {
        tree.write((b) => {
          for (let i = start; i < start + 1000; i++) b.put(key(i * 2654435761), text(`round ${round} key ${i}`));
        });
      }
      sizes.push(tree.stats().fileBytes);
    }
    expect(tree.stats().keys).toBe(5000);
    const settled = sizes.slice(3);
    expect(new Set(settled).size).toBe(1);
    expect(settled[0]).toBeLessThan(sizes[0]! * 3);
    expectClean(tree);
    tree.close();
  });

  it('keeps iterating correctly while the loop body commits changes', () => {
    const tree = BTree.open(tempFile(), { pageSize: 1024 });
    tree.write((b) => {
      for (let i = 0; i < 500; i++) b.put(key(i * 4), text(`v${i}`));
    });
    const seen: bigint[] = [];
    for (const [k] of tree.entries({ from: key(40) })) {
      const n = new DataView(k.buffer).getBigUint64(0);
      seen.push(n);
      tree.delete(k);
      // Insert just ahead of the cursor: the live cursor must see it next.
      if (n % 4n === 0n) tree.put(key(n + 1n), text('ahead'));
      if (seen.length > 2000) break;
    }
    const expected: bigint[] = [];
    for (let i = 10n; i < 500n; i++) expected.push(i * 4n, i * 4n + 1n);
    expect(seen).toEqual(expected);
    expect(tree.stats().keys).toBe(10);
    expectClean(tree);
    tree.close();
  });
});
