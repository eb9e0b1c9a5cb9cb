/**
 * Compression bombs: bodies of about 1 MB (brotli: about 200 KB) that inflate to BOMB_INFLATED_BYTES
 * of zeros. None of them ever holds the inflated gigabyte in memory:
 *
 *   gzip     one gzip member of 16 MiB of zeros, repeated 64 times. A gzip stream may be a series of
 *            members (RFC 1952 section 2.2) and decoders concatenate them.
 *   deflate  a zlib stream (RFC 1950): header, then one raw-deflate segment of 16 MiB of zeros ended by a
 *            full flush (so it starts from an empty window and is byte-aligned: the same bytes every
 *            time) repeated 64 times, an empty final block, and the Adler-32 of the whole 1 GiB.
 *   br       brotli can only be produced by a real encoder: 1 GiB of zeros fed in 1 MiB pieces at
 *            quality 1 (about 0.3 s once per process).
 *
 * Each body is built once per process on first use and kept (about 2.3 MB for the three).
 */
import { constants, createBrotliCompress, deflateRawSync, gzipSync } from 'node:zlib';
import { BOMB_INFLATED_BYTES } from './cases.js';

export type BombEncoding = 'gzip' | 'deflate' | 'br';

const SEGMENT_BYTES = 16 * 1024 * 1024;
const SEGMENTS = BOMB_INFLATED_BYTES / SEGMENT_BYTES;

const built = new Map<BombEncoding, Promise<Buffer>>();

export function bombBody(encoding: BombEncoding): Promise<Buffer> {
  let body = built.get(encoding);
  if (body === undefined) {
    body = build(encoding);
    built.set(encoding, body);
  }
  return body;
}

async function build(encoding: BombEncoding): Promise<Buffer> {
  switch (encoding) {
    case 'gzip': {
      const member = gzipSync(Buffer.alloc(SEGMENT_BYTES), { level: 9 });
      return Buffer.concat(Array.from({ length: SEGMENTS }, () => member));
    }
    case 'deflate': {
      const segment = deflateRawSync(Buffer.alloc(SEGMENT_BYTES), { level: 9, finishFlush: constants.Z_FULL_FLUSH });
      // 0x78 0xDA: deflate, 32 KiB window, maximum compression (RFC 1950 section 2.2).
      const header = Buffer.from([0x78, 0xda]);
      // BFINAL=1, BTYPE=01 (fixed Huffman), then the end-of-block code: an empty last block.
      const finalBlock = Buffer.from([0x03, 0x00]);
      return Buffer.concat([header, ...Array.from({ length: SEGMENTS }, () => segment), finalBlock, adler32OfZeros(BOMB_INFLATED_BYTES)]);
    }
    case 'br':
      return brotliOfZeros(BOMB_INFLATED_BYTES);
  }
}

/** Adler-32 (RFC 1950 section 8) of `length` zero bytes, big-endian: a stays 1, b grows by 1 per byte. */
function adler32OfZeros(length: number): Buffer {
  const a = 1;
  const b = length % 65521;
  const out = Buffer.alloc(4);
  out.writeUInt32BE(((b << 16) | a) >>> 0);
  return out;
}

async function brotliOfZeros(length: number): Promise<Buffer> {
  const encoder = createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_SIZE_HINT]: length } });
  const chunks: Buffer[] = [];
  encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    encoder.once('end', resolve);
    encoder.once('error', reject);
  });
  const piece = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < length; written += piece.length) {
    if (!encoder.write(piece)) await new Promise((resolve) => encoder.once('drain', resolve));
  }
  encoder.end();
  await ended;
  return Buffer.concat(chunks);
}
