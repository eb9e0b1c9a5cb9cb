import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTreeError } from '../../queue-server/btree/errors.js';
import { asPageId, type PageId, type UrlKey } from '../../queue-server/btree/keys.js';
import {
  decodeMeta,
  decodePage,
  encodeBranch,
  encodeFreelist,
  encodeLeaf,
  encodeMeta,
  freelistCapacity,
  maxValueBytes,
  pageChecksum,
  probeMetaPageSize,
  type MetaFields,
} from '../../queue-server/btree/page-codec.js';
import { text } from '../support/btree-helpers.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`btree-page-codec fast-check seed ${seed} (set FC_SEED to replay)`);

function k(n: number): UrlKey {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b as UrlKey;
}

function corruptCode(fn: () => unknown): { code: string; page: number | undefined } | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (!(err instanceof BTreeError)) throw err;
    return { code: err.code, page: err.page };
  }
}

const meta: MetaFields = {
  pageSize: 4096,
  txid: 2 ** 40 + 3,
  root: asPageId(17),
  freelistHead: asPageId(9),
  pageCount: 1234,
  freeCount: 56,
  keyCount: 2 ** 33 + 1,
  height: 4,
  stamp: 2 ** 45 + 7,
};

describe('page checksum', () => {
  it('is CRC-32 of bytes [4, pageSize): the published check value and the bit-at-a-time definition', () => {
    // A page whose bytes from offset 4 on are "123456789": CRC-32 (ISO-HDLC) check value 0xCBF43926.
    expect(pageChecksum(new Uint8Array([0, 0, 0, 0, ...text('123456789')]))).toBe(0xcbf43926);
    expect(pageChecksum(new Uint8Array(4))).toBe(0);
    const slow = (bytes: Uint8Array): number => {
      let c = 0xffffffff;
      for (const b of bytes.subarray(4)) {
        c ^= b;
        for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
      }
      return (c ^ 0xffffffff) >>> 0;
    };
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 100, size: 'max' }), (bytes) => pageChecksum(bytes) === slow(bytes)),
      { seed, numRuns: 200 },
    );
  });
});

describe('page codec', () => {
  it('round-trips leaf pages of every page size, values up to the maximum', () => {
    for (const pageSize of [1024, 4096, 65536]) {
      const max = maxValueBytes(pageSize);
      const values = [new Uint8Array(0), text('x'), new Uint8Array(max).fill(0xab), new Uint8Array(max).fill(1)];
      const keys = values.map((_, i) => k(i * 1000));
      const page = encodeLeaf(asPageId(5), { keys, values }, pageSize);
      expect(page.length).toBe(pageSize);
      const rec = decodePage(page, asPageId(5));
      expect(rec).toEqual({ kind: 'leaf', keys, values });
    }
  });

  it('round-trips random leaves, branches and free-list pages', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 60, size: 'max' }), { maxLength: 14, size: 'max' }),
        fc.array(fc.integer({ min: 2, max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 80, size: 'max' }),
        (values, ids) => {
          const pageSize = 1024;
          const keys = values.map((_, i) => k(i));
          expect(decodePage(encodeLeaf(asPageId(2), { keys, values }, pageSize), asPageId(2))).toEqual({
            kind: 'leaf',
            keys,
            values,
          });
          const children = ids as PageId[];
          const sep = children.slice(1).map((_, i) => k(i));
          expect(decodePage(encodeBranch(asPageId(3), { keys: sep, children }, pageSize), asPageId(3))).toEqual({
            kind: 'branch',
            keys: sep,
            children,
          });
          const fl = decodePage(encodeFreelist(asPageId(4), children, asPageId(77), pageSize), asPageId(4));
          expect(fl).toEqual({ kind: 'freelist', ids: children, next: 77 });
        },
      ),
      { seed, numRuns: 100 },
    );
  });

  it('round-trips meta pages, including 64-bit counters, and probes their page size', () => {
    for (const slot of [0, 1] as const) {
      const page = encodeMeta(slot, meta);
      expect(decodeMeta(page, slot)).toEqual(meta);
      expect(probeMetaPageSize(page.subarray(0, 72))).toBe(4096);
    }
    const empty = { ...meta, root: null, freelistHead: null };
    expect(decodeMeta(encodeMeta(0, empty), 0)).toEqual(empty);
    // A meta written for slot 0 is not accepted as slot 1.
    expect(decodeMeta(encodeMeta(0, meta), 1)).toBeNull();
  });

  it('detects a flipped bit anywhere in a page as BTREE_CORRUPT with the page number', () => {
    const page = encodeLeaf(asPageId(9), { keys: [k(1), k(2)], values: [text('hello'), text('world')] }, 1024);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1023 }), fc.integer({ min: 0, max: 7 }), (at, bit) => {
        const bad = page.slice();
        bad[at]! ^= 1 << bit;
        expect(corruptCode(() => decodePage(bad, asPageId(9)))).toEqual({ code: 'BTREE_CORRUPT', page: 9 });
      }),
      { seed, numRuns: 300 },
    );
    const torn = page.slice();
    torn.fill(0x5a, 512); // the second half still holds older bytes
    expect(corruptCode(() => decodePage(torn, asPageId(9)))?.code).toBe('BTREE_CORRUPT');
    expect(corruptCode(() => decodePage(new Uint8Array(1024), asPageId(9)))?.code).toBe('BTREE_CORRUPT');
    const torMeta = encodeMeta(1, meta);
    torMeta[100] = 1;
    expect(decodeMeta(torMeta, 1)).toBeNull();
  });

  it('detects a valid page read from the wrong offset (misdirected write)', () => {
    const page = encodeLeaf(asPageId(9), { keys: [k(1)], values: [text('v')] }, 1024);
    expect(corruptCode(() => decodePage(page, asPageId(10)))).toEqual({ code: 'BTREE_CORRUPT', page: 10 });
  });

  it('documents capacities: at least four maximum entries per leaf', () => {
    for (const pageSize of [1024, 2048, 4096, 8192, 16384, 32768, 65536]) {
      const max = maxValueBytes(pageSize);
      const four = Array.from({ length: 4 }, () => new Uint8Array(max));
      expect(() => encodeLeaf(asPageId(2), { keys: [k(1), k(2), k(3), k(4)], values: four }, pageSize)).not.toThrow();
      expect(freelistCapacity(pageSize)).toBe((pageSize - 16) / 4);
    }
  });
});
