/**
 * The value stored per URL in the cache-validator B-Tree (`cache.btree`, keyed by the 8-byte URL
 * hash): validators exactly as received, the freshness headers needed to merge a later 304, the
 * absolute expiry on the queue server's clock, and the body size a revalidation saves.
 *
 * Byte layout, version 1 (little-endian):
 *
 *   offset size  field
 *        0    1  version            1
 *        1    1  flags              bit 0: has Date
 *        2    2  etag length        bytes of UTF-8
 *        4    2  last-modified len
 *        6    2  cache-control len
 *        8    2  expires length
 *       10    2  reserved           0
 *       12    4  body bytes         wire bytes of the last full body (what a 304 or a fresh skip saves)
 *       16    8  fresh until        f64, ms since epoch, queue server clock
 *       24    8  date               f64, ms since epoch (the response's Date header), if flag 0
 *       32    8  stored at          f64, ms since epoch
 *       40       etag, last-modified, cache-control, expires (UTF-8, lengths above)
 *
 * Room to grow: a newer version appends fields after these; a decoder reads what it knows. A value
 * longer than MAX_FIELD_BYTES is not stored (the URL is then fetched without that validator), so a
 * record always fits a 4 KiB page's value limit.
 */

export interface CacheRecord {
  readonly etag: string | null;
  readonly lastModified: string | null;
  readonly cacheControl: string | null;
  readonly expires: string | null;
  /** ms since epoch (queue server clock); before it the stored response is fresh. */
  readonly freshUntil: number;
  readonly date: number | null;
  readonly storedAt: number;
  readonly bodyBytes: number;
}

const VERSION = 1;
const HEADER_BYTES = 40;
export const MAX_FIELD_BYTES = 240;

function fieldBytes(value: string | null): Buffer {
  if (value === null) return Buffer.alloc(0);
  const bytes = Buffer.from(value, 'utf8');
  return bytes.length > MAX_FIELD_BYTES ? Buffer.alloc(0) : bytes;
}

export function encodeCacheRecord(record: CacheRecord): Uint8Array {
  const fields = [record.etag, record.lastModified, record.cacheControl, record.expires].map(fieldBytes);
  const out = Buffer.alloc(HEADER_BYTES + fields.reduce((sum, field) => sum + field.length, 0));
  out.writeUInt8(VERSION, 0);
  out.writeUInt8(record.date === null ? 0 : 1, 1);
  fields.forEach((field, index) => out.writeUInt16LE(field.length, 2 + index * 2));
  out.writeUInt32LE(Math.min(record.bodyBytes, 0xffffffff), 12);
  out.writeDoubleLE(record.freshUntil, 16);
  out.writeDoubleLE(record.date ?? 0, 24);
  out.writeDoubleLE(record.storedAt, 32);
  let offset = HEADER_BYTES;
  for (const field of fields) {
    field.copy(out, offset);
    offset += field.length;
  }
  return out;
}

export function decodeCacheRecord(bytes: Uint8Array): CacheRecord {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length < HEADER_BYTES || view.readUInt8(0) < VERSION) throw new Error(`cache record of ${view.length} bytes is not version ${VERSION}`);
  const lengths = [0, 1, 2, 3].map((index) => view.readUInt16LE(2 + index * 2));
  const fields: (string | null)[] = [];
  let offset = HEADER_BYTES;
  for (const length of lengths) {
    if (offset + length > view.length) throw new Error('cache record field runs past its end');
    fields.push(length === 0 ? null : view.toString('utf8', offset, offset + length));
    offset += length;
  }
  return {
    etag: fields[0]!,
    lastModified: fields[1]!,
    cacheControl: fields[2]!,
    expires: fields[3]!,
    bodyBytes: view.readUInt32LE(12),
    freshUntil: view.readDoubleLE(16),
    date: (view.readUInt8(1) & 1) === 1 ? view.readDoubleLE(24) : null,
    storedAt: view.readDoubleLE(32),
  };
}
