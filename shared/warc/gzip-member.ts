/**
 * One WARC record, one gzip member (WARC 1.1 annex A, "record-at-time compression"; RFC 1952), so a
 * reader can seek to any record's offset and inflate it alone.
 *
 * Petrel's members carry their own length in the gzip header's extra field (RFC 1952 section 2.3.1.1,
 * FLG.FEXTRA), so the queue server can walk a file from member to member reading 24 bytes each, without
 * inflating anything: that is how it finds the last whole record after a crash (queue-server/warc/),
 * and how it checks a posted record is one member of the length it claims. Every gzip reader skips
 * extra fields it does not know (zlib, pako and so warcio, Python's gzip, zcat).
 *
 *   offset size  field
 *        0    2  ID1 ID2            0x1f 0x8b
 *        2    1  CM                 8 (deflate)
 *        3    1  FLG                0x04 (FEXTRA only)
 *        4    4  MTIME              0 (none: the WARC-Date says when)
 *        8    1  XFL                0
 *        9    1  OS                 255 (unknown)
 *       10    2  XLEN               12, little-endian
 *       12    2  SI1 SI2            'P' 'L' (Petrel, Length)
 *       14    2  LEN                8
 *       16    8  member length      u64 little-endian: bytes of the whole member, this header included
 *       24       raw deflate data, then CRC-32 (4) and ISIZE (4), little-endian
 */
import { constants, crc32, deflateRawSync, gunzipSync } from 'node:zlib';

export const MEMBER_HEADER_BYTES = 24;
const TRAILER_BYTES = 8;
const SI1 = 0x50; // 'P'
const SI2 = 0x4c; // 'L'

/** Deflate's stored blocks hold at most this many bytes each (RFC 1951 section 3.2.4: LEN is 16 bits). */
const STORED_BLOCK_BYTES = 0xffff;

/**
 * Packs `parts` (concatenated) into one member. `level` is zlib's 1 (fastest) to 9. The parts from
 * index `storeFrom` on (none by default) are stored rather than deflated: deflate's uncompressed
 * blocks, written here without zlib (the bytes copied once, five bytes of framing per 64 KiB), for
 * bytes that deflating cannot shrink, such as a body that came gzip- or br-compressed
 * (shared/warc/exchange.ts decides). The parts before it are deflated and flushed to a byte boundary
 * (zlib's Z_SYNC_FLUSH, four bytes), after which the stored blocks continue the same deflate stream.
 */
export function gzipMember(parts: readonly Uint8Array[], level: number, storeFrom = parts.length): Buffer {
  if (!Number.isInteger(level) || level < 1 || level > 9) throw new RangeError(`gzip level ${level} is not 1 to 9`);
  if (!Number.isInteger(storeFrom) || storeFrom < 0 || storeFrom > parts.length) throw new RangeError(`storeFrom ${storeFrom} is not a part index`);
  let crc = 0;
  let size = 0;
  let deflatedSize = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    // Node 20's crc32 answers 0 for an empty view with no data pointer, whatever the running value: skipped.
    if (part.length > 0) crc = crc32(part, crc);
    size += part.length;
    if (i < storeFrom) deflatedSize += part.length;
  }
  const toDeflate = parts.slice(0, storeFrom);
  const stored = parts.slice(storeFrom);
  const storedSize = size - deflatedSize;
  // With nothing to store, the deflated part ends the stream (even when it deflates nothing).
  const deflated =
    toDeflate.length === 0 && stored.length > 0
      ? null
      : deflateRawSync(toDeflate.length === 1 ? toDeflate[0]! : Buffer.concat(toDeflate, deflatedSize), {
          level,
          ...windowFor(deflatedSize),
          ...(stored.length === 0 ? {} : { finishFlush: constants.Z_SYNC_FLUSH }),
        });
  const deflatedLength = deflated?.length ?? 0;
  const body = deflatedLength + (stored.length === 0 ? 0 : storedLength(storedSize));
  const member = Buffer.allocUnsafe(MEMBER_HEADER_BYTES + body + TRAILER_BYTES);
  member[0] = 0x1f;
  member[1] = 0x8b;
  member[2] = 8;
  member[3] = 0x04;
  member.writeUInt32LE(0, 4);
  member[8] = 0;
  member[9] = 255;
  member.writeUInt16LE(12, 10);
  member[12] = SI1;
  member[13] = SI2;
  member.writeUInt16LE(8, 14);
  member.writeBigUInt64LE(BigInt(member.length), 16);
  if (deflated !== null) deflated.copy(member, MEMBER_HEADER_BYTES);
  if (stored.length > 0) writeStored(stored, storedSize, member, MEMBER_HEADER_BYTES + deflatedLength);
  member.writeUInt32LE(crc >>> 0, member.length - 8);
  member.writeUInt32LE(size >>> 0, member.length - 4);
  return member;
}

/** Bytes of `size` bytes as stored blocks: 5 bytes of framing per block, and one (empty) block for nothing. */
function storedLength(size: number): number {
  return size + 5 * Math.max(1, Math.ceil(size / STORED_BLOCK_BYTES));
}

/**
 * `parts` as deflate stored blocks at `out[at..]`: per block BFINAL (1 on the last) and BTYPE 00 in
 * one byte (the rest of it padding), then LEN and its ones' complement NLEN, little-endian, then LEN
 * bytes of data.
 */
function writeStored(parts: readonly Uint8Array[], size: number, out: Buffer, at: number): void {
  let part = 0;
  let inPart = 0;
  let left = size;
  do {
    const length = Math.min(left, STORED_BLOCK_BYTES);
    left -= length;
    out[at] = left === 0 ? 1 : 0;
    out.writeUInt16LE(length, at + 1);
    out.writeUInt16LE(~length & 0xffff, at + 3);
    at += 5;
    let need = length;
    while (need > 0) {
      const source = parts[part]!;
      const take = Math.min(need, source.length - inPart);
      out.set(source.subarray(inPart, inPart + take), at);
      at += take;
      need -= take;
      inPart += take;
      if (inPart === source.length) {
        part++;
        inPart = 0;
      }
    }
  } while (left > 0);
}

/**
 * zlib's window and hash sizes for `size` bytes of input: a window no larger than the input needs (a
 * match can reach back no further than the input's start anyway), and a hash table to match. zlib
 * allocates and clears both for every member; at its defaults (a 32 KiB window, memLevel 8) that was
 * 13 % of the instructions of building a page's two records, most of it for a request record of a
 * few hundred bytes (callgrind over 1,600 captures of the PostgreSQL manual's pages). Raw deflate
 * takes windowBits 9 to 15.
 */
export function windowFor(size: number): { windowBits: number; memLevel: number } {
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(size + 1))));
  return { windowBits, memLevel: Math.max(1, windowBits - 7) };
}

/**
 * The member length a Petrel member header states, or null when `header` (at least its first 24
 * bytes) is not a Petrel member header: wrong magic, other flags, no length field, a length shorter
 * than an empty member.
 */
export function memberLength(header: Uint8Array): number | null {
  if (header.length < MEMBER_HEADER_BYTES) return null;
  const view = Buffer.from(header.buffer, header.byteOffset, MEMBER_HEADER_BYTES);
  if (view[0] !== 0x1f || view[1] !== 0x8b || view[2] !== 8 || view[3] !== 0x04) return null;
  if (view.readUInt16LE(10) !== 12 || view[12] !== SI1 || view[13] !== SI2 || view.readUInt16LE(14) !== 8) return null;
  const length = view.readBigUInt64LE(16);
  // The smallest member: header, an empty deflate stream (2 bytes), trailer.
  if (length < BigInt(MEMBER_HEADER_BYTES + 2 + TRAILER_BYTES) || length > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(length);
}

/**
 * Inflates one whole member, checking its CRC-32 and size (zlib does); throws on anything else
 * (a cut member, a second member after it, a length field that disagrees with the bytes).
 */
export function gunzipMember(member: Uint8Array): Buffer {
  const length = memberLength(member);
  if (length === null || length !== member.length) throw new Error(`not one Petrel gzip member of ${member.length} bytes (header says ${length})`);
  return gunzipSync(member);
}
