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
import { crc32, deflateRawSync, gunzipSync } from 'node:zlib';

export const MEMBER_HEADER_BYTES = 24;
const TRAILER_BYTES = 8;
const SI1 = 0x50; // 'P'
const SI2 = 0x4c; // 'L'

/**
 * Compresses `parts` (concatenated) into one member. `level` is zlib's 1 (fastest) to 9; the fetcher's
 * choice is measured in shared/warc/exchange.ts.
 */
export function gzipMember(parts: readonly Uint8Array[], level: number): Buffer {
  let crc = 0;
  let size = 0;
  for (const part of parts) {
    crc = crc32(part, crc);
    size += part.length;
  }
  const deflated = deflateRawSync(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), { level, ...windowFor(size) });
  const member = Buffer.allocUnsafe(MEMBER_HEADER_BYTES + deflated.length + TRAILER_BYTES);
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
  deflated.copy(member, MEMBER_HEADER_BYTES);
  member.writeUInt32LE(crc >>> 0, member.length - 8);
  member.writeUInt32LE(size >>> 0, member.length - 4);
  return member;
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
