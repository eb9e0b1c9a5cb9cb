/**
 * The document store of a segment: per page doc a HEAD record (URL, title, language, fetch time: what
 * a results list shows) and a TEXT record (the stored text, for snippets), in two separate runs of
 * blocks, so a results page without snippets never decompresses any text.
 *
 * A block is a codec byte and a payload: 0 = the records as they are, 1 = the records compressed with
 * zlib deflate-raw. Segments written by a commit store their blocks raw (no compression on the queue
 * server's event loop); merges, in the worker thread, compress every block they write (level 4), so
 * all but the newest, smallest segments are compressed.
 *
 *   head record: varint-prefixed UTF-8 url, title (empty: none), language (empty: unknown); varint fetchedAt
 *   text record: varint-prefixed UTF-8 text
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { ByteReader, ByteWriter } from './bytes.js';
import { IndexError } from './errors.js';

export const HEAD_BLOCK_BYTES = 4 * 1024;
export const TEXT_BLOCK_BYTES = 32 * 1024;
export const CODEC_RAW = 0;
export const CODEC_DEFLATE = 1;
/**
 * zlib level of blocks written by merges. Measured on the benchmark's text (9.5 MB in 32 KiB blocks,
 * a loaded machine): level 1 204 ms and 38.4 % of the size, level 4 146 ms and 35.6 %, level 6 338 ms
 * and 35.2 %.
 */
export const MERGE_ZLIB_LEVEL = 4;

export interface StoredHead {
  readonly url: string;
  /** Empty when the page had no title. */
  readonly title: string;
  /** Empty when unknown. */
  readonly language: string;
  /** ms since epoch. */
  readonly fetchedAt: number;
}

export interface StoredDocument extends StoredHead {
  readonly text: string;
}

export interface StoreBlock {
  /** Codec byte, then the payload. */
  readonly bytes: Uint8Array;
  readonly records: number;
}

export function encodeHead(out: ByteWriter, head: StoredHead): void {
  out.string(head.url);
  out.string(head.title);
  out.string(head.language);
  out.varint(Math.max(0, Math.floor(head.fetchedAt)));
}

export function decodeHead(reader: ByteReader): StoredHead {
  return { url: reader.string(), title: reader.string(), language: reader.string(), fetchedAt: reader.varint() };
}

/** A block's records, decompressed if need be. */
export function blockRecords(block: Uint8Array, where: string): Uint8Array {
  const codec = block[0];
  const payload = block.subarray(1);
  if (codec === CODEC_RAW) return payload;
  if (codec === CODEC_DEFLATE) {
    try {
      return inflateRawSync(payload);
    } catch {
      throw new IndexError('INDEX_CORRUPT', `${where}: does not decompress`);
    }
  }
  throw new IndexError('INDEX_CORRUPT', `${where}: unknown codec ${codec}`);
}

export function encodeBlock(records: Uint8Array, compress: boolean): Uint8Array {
  const payload = compress ? deflateRawSync(records, { level: MERGE_ZLIB_LEVEL }) : records;
  const block = new Uint8Array(payload.length + 1);
  block[0] = compress ? CODEC_DEFLATE : CODEC_RAW;
  block.set(payload, 1);
  return block;
}

/** Accumulates records into blocks of about `blockBytes`. */
export class BlockSink {
  readonly blocks: StoreBlock[] = [];
  readonly #blockBytes: number;
  readonly #compress: boolean;
  readonly current = new ByteWriter(1024);
  #records = 0;
  #bytes = 0;

  constructor(blockBytes: number, compress: boolean) {
    this.#blockBytes = blockBytes;
    this.#compress = compress;
  }

  /** Bytes held (sealed blocks and the open one). */
  get bytes(): number {
    return this.#bytes + this.current.capacity;
  }

  /** Call after writing one record into `current`. */
  recordDone(): void {
    this.#records++;
    if (this.current.length >= this.#blockBytes) this.seal();
  }

  seal(): void {
    if (this.#records === 0) return;
    const bytes = encodeBlock(this.current.view(), this.#compress);
    this.blocks.push({ bytes, records: this.#records });
    this.#bytes += bytes.length;
    this.current.reset();
    this.#records = 0;
  }
}
