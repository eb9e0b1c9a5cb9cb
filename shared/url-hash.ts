/**
 * URL hashes: the 8-byte raw xxHash64 (seed 0) of a normalized URL's UTF-8 bytes, big-endian.
 *
 * The same 8 bytes key the seen-set, the B-Trees and the wire protocol, so they are a branded type:
 * a plain Uint8Array can not be passed where a UrlHash is meant without going through `urlHash`.
 * Byte order is the key order of the on-disk trees (compared as unsigned bytes).
 */
import xxhash from 'xxhash-wasm';

export type UrlHash = Uint8Array & { readonly __brand: 'UrlHash' };

const hasher = await xxhash();

/** The 64-bit hash as a bigint (for in-memory tables that want numbers, not bytes). */
export function urlHash64(normalizedUrl: string): bigint {
  return hasher.h64Raw(Buffer.from(normalizedUrl, 'utf8'), 0n);
}

export function urlHash(normalizedUrl: string): UrlHash {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeBigUInt64BE(urlHash64(normalizedUrl));
  return bytes as unknown as UrlHash;
}

/*
 * `urlHash` and `urlHashFromHalves` slice their 8 bytes from Node's shared 8 KiB Buffer pool: cheap
 * for a hash used and dropped, but one kept for long keeps its whole pool slab alive (the hashes of the
 * URLs a queue server held in memory pinned 7,971 slabs, 62 MiB, at 920,000 known URLs). What keeps a
 * hash for long keeps its two halves (`urlHashHigh`, `urlHashLow`) or copies it into storage of its
 * own (queue-server/frontier/frontier.ts ResidentUrl).
 */

/** The 8 bytes of a URL hash (or of a key read back from a tree keyed by them) as 16 lowercase hex digits. */
export function urlHashHex(hash: UrlHash | Uint8Array): string {
  return Buffer.from(hash.buffer, hash.byteOffset, 8).toString('hex');
}

/** The hash's high and low 32 bits, unsigned (for in-memory tables keyed by two u32 halves). */
export function urlHashHigh(hash: Uint8Array): number {
  return ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0;
}

export function urlHashLow(hash: Uint8Array): number {
  return ((hash[4]! << 24) | (hash[5]! << 16) | (hash[6]! << 8) | hash[7]!) >>> 0;
}

/** The hash of the two halves urlHashHigh and urlHashLow gave. */
export function urlHashFromHalves(hi: number, lo: number): UrlHash {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeUInt32BE(hi >>> 0, 0);
  bytes.writeUInt32BE(lo >>> 0, 4);
  return bytes as unknown as UrlHash;
}

export function urlHashFromHex(hex: string): UrlHash {
  if (!/^[0-9a-f]{16}$/.test(hex)) throw new Error(`not a 16-digit lowercase hex URL hash: ${JSON.stringify(hex)}`);
  return Buffer.from(hex, 'hex') as unknown as UrlHash;
}

/** xxHash64 of arbitrary bytes or text, as 16 hex digits; used for content signatures. */
export function contentSignature(content: string | Uint8Array): string {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return hasher.h64Raw(bytes, 0n).toString(16).padStart(16, '0');
}
