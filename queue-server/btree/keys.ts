/**
 * The two things a B-tree page refers to, branded so they cannot be mixed up with plain numbers or
 * arbitrary byte arrays: page numbers and 8-byte keys.
 *
 * A key is the raw big-endian xxHash64 of a normalized URL. Keys compare as unsigned bytes, so key order is
 * byte order is numeric order of the hash.
 */
import { BTreeError } from './errors.js';

/** Index of a page in the file: byte offset = id * pageSize. Pages 0 and 1 are the meta pages. */
export type PageId = number & { readonly __brand: 'PageId' };

/** Exactly `KEY_BYTES` bytes. Produced only by `copyKey`/`viewKey` (validated) or the page decoder. */
export type UrlKey = Uint8Array & { readonly __brand: 'UrlKey' };

export const KEY_BYTES = 8;

export function asPageId(n: number): PageId {
  return n as PageId;
}

/** Unsigned byte-wise comparison: negative, zero or positive like `Array.prototype.sort` expects. */
export function compareKeys(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < KEY_BYTES; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return 0;
}

function assertKeyShape(key: unknown): asserts key is Uint8Array {
  if (!(key instanceof Uint8Array) || key.length !== KEY_BYTES) {
    const got = key instanceof Uint8Array ? `${key.length} bytes` : typeof key;
    throw new BTreeError('BTREE_KEY_INVALID', `key must be a Uint8Array of ${KEY_BYTES} bytes, got ${got}`);
  }
}

/** Validates and copies: use when the key is stored (the caller may reuse its buffer). */
export function copyKey(key: unknown): UrlKey {
  assertKeyShape(key);
  return new Uint8Array(key) as UrlKey;
}

/** Validates without copying: use for lookups that do not retain the key. */
export function viewKey(key: unknown): UrlKey {
  assertKeyShape(key);
  return key as UrlKey;
}

export function keyToHex(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex');
}
