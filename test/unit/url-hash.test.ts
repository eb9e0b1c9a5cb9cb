/**
 * URL hashes (shared/url-hash.ts): the 8 bytes that key the seen-set, the B-Trees and the wire must be
 * xxHash64 with seed 0, big-endian, byte for byte the same as every other xxHash64 implementation.
 * Reference vectors are those of the xxHash project (XXH64, seed 0).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentSignature, urlHash, urlHash64, urlHashFromHex, urlHashHex, type UrlHash } from '../../shared/url-hash.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`url-hash fast-check seed ${seed} (set FC_SEED to replay)`);

/** Any text, lone surrogates included (cheaper to build than fc.string({ unit: 'binary' })). */
function anyText(maxLength: number): fc.Arbitrary<string> {
  const codePoint = fc.oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0x80, max: 0xffff }), fc.integer({ min: 0x10000, max: 0x10ffff }));
  return fc.array(codePoint, { maxLength }).map((points) => String.fromCodePoint(...points));
}

const VECTORS: readonly [string, string][] = [
  ['', 'ef46db3751d8e999'],
  ['abc', '44bc2cf5ad770999'],
  ['hello', '26c7827d889f6da3'],
];

describe('urlHash', () => {
  it.each(VECTORS)('hashes %j to the xxHash64 reference value %s', (text, hex) => {
    expect(urlHash64(text)).toBe(BigInt(`0x${hex}`));
    expect(urlHashHex(urlHash(text))).toBe(hex);
  });

  it('returns the 64-bit value as 8 bytes, most significant first', () => {
    const hash = urlHash('abc');
    expect(hash.length).toBe(8);
    expect([...hash]).toEqual([0x44, 0xbc, 0x2c, 0xf5, 0xad, 0x77, 0x09, 0x99]);
    expect([...urlHash('')]).toEqual([0xef, 0x46, 0xdb, 0x37, 0x51, 0xd8, 0xe9, 0x99]);
  });

  it('hashes the UTF-8 bytes of the text', () => {
    const text = 'http://xn--bcher-kva.example/é日本';
    expect(urlHashHex(urlHash(text))).toBe(contentSignature(new TextEncoder().encode(text)));
  });

  it('gives every call its own bytes, so a stored hash is never overwritten by the next one', () => {
    const first = urlHash('abc');
    const copy = [...first];
    for (let i = 0; i < 2000; i++) urlHash(`http://example.com/${i}`);
    expect([...first]).toEqual(copy);
  });

  it('agrees with urlHash64 for any text', () => {
    fc.assert(
      fc.property(anyText(64), (text) => {
        const bytes = Buffer.from(urlHash(text));
        expect(bytes.readBigUInt64BE(0)).toBe(urlHash64(text));
      }),
      { seed, numRuns: 500 },
    );
  });
});

describe('hex form', () => {
  it('round-trips any 8 bytes through hex', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 8 }), (bytes) => {
        const hex = Buffer.from(bytes).toString('hex');
        const hash = urlHashFromHex(hex);
        expect([...hash]).toEqual([...bytes]);
        expect(urlHashHex(hash)).toBe(hex);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('round-trips a hash through hex', () => {
    for (const [text, hex] of VECTORS) expect([...urlHashFromHex(urlHashHex(urlHash(text)))]).toEqual([...Buffer.from(hex, 'hex')]);
  });

  it('reads only the 8 bytes of a hash that is a view into a larger buffer', () => {
    const backing = Buffer.alloc(32, 0xaa);
    Buffer.from('44bc2cf5ad770999', 'hex').copy(backing, 5);
    const view = backing.subarray(5, 13) as unknown as UrlHash;
    expect(urlHashHex(view)).toBe('44bc2cf5ad770999');
  });

  it.each([
    ['empty', ''],
    ['15 digits', '44bc2cf5ad77099'],
    ['17 digits', '44bc2cf5ad7709990'],
    ['uppercase', '44BC2CF5AD770999'],
    ['a non-hex letter', '44bc2cf5ad77099g'],
    ['a 0x prefix', '0x44bc2cf5ad7709'],
    ['a trailing newline', '44bc2cf5ad770999\n'],
    ['surrounding spaces', ' 44bc2cf5ad770999 '],
    ['a sign', '-4bc2cf5ad770999'],
  ])('urlHashFromHex rejects %s', (_label, hex) => {
    expect(() => urlHashFromHex(hex)).toThrow(/16-digit lowercase hex/);
  });
});

describe('contentSignature', () => {
  it.each(VECTORS)('signs %j as %s', (text, hex) => {
    expect(contentSignature(text)).toBe(hex);
    expect(contentSignature(Buffer.from(text, 'utf8'))).toBe(hex);
  });

  it('gives the same signature for a string and its UTF-8 bytes, always 16 lowercase hex digits', () => {
    fc.assert(
      fc.property(anyText(200), (text) => {
        const fromString = contentSignature(text);
        expect(fromString).toMatch(/^[0-9a-f]{16}$/);
        expect(contentSignature(new TextEncoder().encode(text))).toBe(fromString);
        expect(contentSignature(Buffer.from(text, 'utf8'))).toBe(fromString);
        expect(fromString).toBe(urlHash64(text).toString(16).padStart(16, '0'));
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('signs raw bytes that are not valid UTF-8 without replacing them', () => {
    const invalid = new Uint8Array([0xff, 0xfe, 0x80]);
    const replaced = new TextEncoder().encode(new TextDecoder().decode(invalid));
    expect(contentSignature(invalid)).not.toBe(contentSignature(replaced));
  });
});
