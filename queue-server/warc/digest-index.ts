/**
 * The payload digest index, `warc-digests.btree` in the data directory: for each payload digest of a
 * stored 2xx response, where that first response is (revisit.ts decides who gets in). A B-Tree on disk
 * rather than a map in memory, so deduplication costs no memory per page and holds across restarts
 * and passes; its page cache is the bound (256 pages of 16 KiB, 4 MiB).
 *
 * Key: the first 8 bytes of the SHA-1. Two digests sharing them keep the first one; the second is
 * simply stored in full (the whole digest is in the value and compared).
 *
 * Value layout (little-endian):
 *
 *   offset size  field
 *        0    1  version        1
 *        1   20  SHA-1          the whole digest
 *       21   56  location       queue-server/warc/location.ts `encodeCaptureLocation`
 *       77    2  URL length     bytes of UTF-8
 *       79       WARC-Target-URI of the response
 *
 * Crash order: committed after the WARC files (warc-archive.ts), so an entry never names a record
 * that is not on disk; a crash between the two only loses the entry (a later duplicate is then stored
 * in full).
 */
import type { UrlHash } from '../../shared/url-hash.js';
import { base32 } from '../../shared/warc/record.js';
import type { FileOps } from '../storage/file-ops.js';
import { StagedTree } from '../storage/staged-tree.js';
import { CAPTURE_LOCATION_BYTES, decodeCaptureLocation, encodeCaptureLocation } from './location.js';
import type { DigestEntry } from './revisit.js';

export const DIGEST_INDEX_PAGE_SIZE = 16 * 1024;
const VERSION = 1;
const HEADER = 1 + 20 + CAPTURE_LOCATION_BYTES + 2;
const MAX_URL_BYTES = 3000;

export class DigestIndex extends StagedTree<DigestEntry> {
  static open(path: string, options: { readOnly?: boolean; io?: FileOps } = {}): DigestIndex {
    const tree = options.readOnly === true ? StagedTree.openReadOnly(path, { cachePages: 256 }) : StagedTree.openTree(path, { pageSize: DIGEST_INDEX_PAGE_SIZE, cachePages: 256, io: options.io });
    return new DigestIndex(tree, { encode: encodeDigestEntry, decode: decodeDigestEntry });
  }

  /** The entry under `digest`'s key, or null; may hold another digest with the same first 8 bytes. */
  find(digest: string): DigestEntry | null {
    return this.get(digestKey(digest));
  }

  remember(entry: DigestEntry): void {
    this.stage(digestKey(entry.digest), entry);
  }
}

/** The SHA-1 bytes of a `sha1:` base32 digest. */
export function sha1Bytes(digest: string): Buffer {
  if (!/^sha1:[A-Z2-7]{32}$/.test(digest)) throw new Error(`not a sha1: base32 digest: ${JSON.stringify(digest)}`);
  const text = digest.slice(5);
  const out = Buffer.alloc(20);
  let bits = 0;
  let value = 0;
  let at = 0;
  for (const char of text) {
    value = (value << 5) | 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(char);
    bits += 5;
    if (bits >= 8) {
      out[at++] = (value >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  return out;
}

function digestKey(digest: string): UrlHash {
  return sha1Bytes(digest).subarray(0, 8) as unknown as UrlHash;
}

function encodeDigestEntry(entry: DigestEntry): Uint8Array {
  const url = Buffer.from(entry.url, 'utf8');
  if (url.length > MAX_URL_BYTES) throw new Error(`digest index entry URL of ${url.length} bytes exceeds ${MAX_URL_BYTES}`);
  const out = Buffer.alloc(HEADER + url.length);
  out.writeUInt8(VERSION, 0);
  sha1Bytes(entry.digest).copy(out, 1);
  encodeCaptureLocation(entry.location, out, 21);
  out.writeUInt16LE(url.length, 21 + CAPTURE_LOCATION_BYTES);
  url.copy(out, HEADER);
  return out;
}

function decodeDigestEntry(bytes: Uint8Array): DigestEntry {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length < HEADER || view.readUInt8(0) !== VERSION) throw new Error(`digest index entry of ${view.length} bytes, version ${view[0]}: not one this Petrel writes`);
  const urlLength = view.readUInt16LE(21 + CAPTURE_LOCATION_BYTES);
  if (HEADER + urlLength !== view.length) throw new Error('digest index entry lengths do not add up');
  return {
    digest: `sha1:${base32(view.subarray(1, 21))}`,
    location: decodeCaptureLocation(view, 21),
    url: view.toString('utf8', HEADER),
  };
}
