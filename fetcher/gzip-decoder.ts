/**
 * A gzip body decoder that reads what browsers read (RFC 1952 members, one after the other) and ignores
 * what follows the last member. Node's gunzip fails a body with bytes after its member that are not
 * another member (`Z_DATA_ERROR`, and the page inflated in the same write is lost with it), or ends
 * with a newline (`Z_BUF_ERROR`); PHP pages gzipped by the server and followed by the newline of a
 * closing `?>` are the classic case, and browsers, wget and curl show them. Here a member's header is
 * read by hand, its deflate data goes to an `InflateRaw` (which stops at the end of the data and says
 * how much it used), and its trailer is checked: CRC-32 and length, as gunzip checks them. Bytes after
 * a member that do not start another are dropped. A damaged member, a bad trailer, or a body that ends
 * inside a member is an error, with the zlib code gunzip gives (download.ts maps it to
 * `bad-content-encoding`).
 *
 * Writes are acknowledged once the member's inflater took them, so the caller's backpressure (a
 * compression bomb is read slowly) works as with gunzip. What gunzip bounds by reading in C, this
 * bounds by count: a header of at most MAX_HEADER_BYTES (a file name or comment with no end would be
 * joined and searched again at each write), at most MAX_MEMBERS members (each one an inflater), and at
 * most MAX_TAIL_BYTES after the last (a keep-alive response that goes on sending garbage fails at once,
 * not at the timeout). Not checked, as browsers do not check them: the header's own CRC (FHCRC) and
 * the reserved flag bits.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { createInflateRaw, crc32, type InflateRaw } from 'node:zlib';

const ID1 = 0x1f;
const ID2 = 0x8b;
const DEFLATE = 8;
const FHCRC = 0x02;
const FEXTRA = 0x04;
const FNAME = 0x08;
const FCOMMENT = 0x10;
const TRAILER_BYTES = 8;
/** Longest member header read (fixed part, extra field, file name, comment). */
export const MAX_HEADER_BYTES = 64 * 1024;
/** Most members in one body (real ones have one; concatenated logs a few). Each costs an inflater, about 1 ms. */
export const MAX_MEMBERS = 100;
/** Most bytes dropped after the last member. */
export const MAX_TAIL_BYTES = 64 * 1024;

/** The length of the gzip member header at the start of `bytes`, 0 if more bytes are needed, -1 if it is no header. */
export function gzipHeaderLength(bytes: Buffer): number {
  if (bytes.length >= 1 && bytes[0] !== ID1) return -1;
  if (bytes.length >= 2 && bytes[1] !== ID2) return -1;
  if (bytes.length >= 3 && bytes[2] !== DEFLATE) return -1;
  if (bytes.length < 10) return 0;
  const flags = bytes[3]!;
  let at = 10;
  if ((flags & FEXTRA) !== 0) {
    if (bytes.length < at + 2) return 0;
    at += 2 + bytes.readUInt16LE(at);
  }
  for (const flag of [FNAME, FCOMMENT]) {
    if ((flags & flag) === 0) continue;
    const end = bytes.indexOf(0, at);
    if (end === -1) return 0;
    at = end + 1;
  }
  if ((flags & FHCRC) !== 0) at += 2;
  return bytes.length < at ? 0 : at;
}

function zlibError(message: string, code: 'Z_DATA_ERROR' | 'Z_BUF_ERROR'): Error {
  return Object.assign(new Error(message), { code, errno: code === 'Z_DATA_ERROR' ? -3 : -5 });
}

type State = 'header' | 'member' | 'trailer' | 'done';

export class TolerantGunzip extends Transform {
  #state: State = 'header';
  /** Bytes not given to an inflater: a header or trailer being read, or what follows a member. */
  #pending: Buffer = Buffer.alloc(0);
  #inflater: InflateRaw | null = null;
  /** The bytes given to the member's inflater that it may not have used yet, from offset #keptFrom of all it was given. */
  #kept: Buffer[] = [];
  #keptFrom = 0;
  #given = 0;
  #ended = false;
  #error: Error | null = null;
  /** Answers the write the inflater is busy with, should it fail. */
  #writeFailed: ((error: Error) => void) | null = null;
  /** Waits for the member's inflater to end (or fail). */
  #waiting: ((error?: Error) => void) | null = null;
  #crc = 0;
  #size = 0;
  #members = 0;
  /** Bytes dropped after the last member. */
  #dropped = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#state === 'done') {
      this.#dropped += chunk.length;
      return callback(this.#dropped > MAX_TAIL_BYTES ? zlibError(`more than ${MAX_TAIL_BYTES} bytes after the last gzip member`, 'Z_DATA_ERROR') : null);
    }
    if (this.#state === 'member') return this.#feed(chunk, callback);
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#advance(callback);
  }

  override _flush(callback: TransformCallback): void {
    const finish = (error?: Error | null) => {
      if (error) return callback(error);
      // After a whole member, a header of another that never completes is dropped like any other tail
      // (a member whose header is whole must be whole too: cut or damaged, it fails the body).
      if (this.#state === 'done' || (this.#state === 'header' && this.#members > 0)) return callback();
      callback(zlibError('unexpected end of file', 'Z_BUF_ERROR'));
    };
    if (this.#state !== 'member') return finish();
    if (this.#error !== null) return finish(this.#error);
    if (this.#ended) return this.#afterMember(finish);
    this.#waiting = (error) => (error ? finish(error) : this.#afterMember(finish));
    this.#inflater!.end();
  }

  override _destroy(error: Error | null, callback: (error: Error | null) => void): void {
    this.#inflater?.destroy();
    callback(error);
  }

  /** Reads trailers and headers from #pending while it holds them whole; starts the next member's inflater. */
  #advance(callback: TransformCallback): void {
    if (this.#state === 'trailer') {
      if (this.#pending.length < TRAILER_BYTES) return callback();
      if (this.#pending.readUInt32LE(0) !== this.#crc >>> 0 || this.#pending.readUInt32LE(4) !== this.#size) return callback(zlibError('incorrect data check', 'Z_DATA_ERROR'));
      this.#pending = this.#pending.subarray(TRAILER_BYTES);
      this.#members++;
      this.#state = 'header';
    }
    if (this.#pending.length === 0) return callback();
    const header = gzipHeaderLength(this.#pending);
    if (header === 0) return callback(this.#pending.length > MAX_HEADER_BYTES ? zlibError(`a gzip header longer than ${MAX_HEADER_BYTES} bytes`, 'Z_DATA_ERROR') : null);
    if (header === -1) {
      if (this.#members === 0) return callback(zlibError('incorrect header check', 'Z_DATA_ERROR'));
      // After a whole member, what does not start another is dropped.
      this.#state = 'done';
      this.#dropped = this.#pending.length;
      this.#pending = Buffer.alloc(0);
      return callback(this.#dropped > MAX_TAIL_BYTES ? zlibError(`more than ${MAX_TAIL_BYTES} bytes after the last gzip member`, 'Z_DATA_ERROR') : null);
    }
    if (this.#members >= MAX_MEMBERS) return callback(zlibError(`more than ${MAX_MEMBERS} gzip members`, 'Z_DATA_ERROR'));
    const rest = this.#pending.subarray(header);
    this.#pending = Buffer.alloc(0);
    this.#startMember();
    if (rest.length === 0) return callback();
    this.#feed(rest, callback);
  }

  #startMember(): void {
    const inflater = createInflateRaw();
    this.#state = 'member';
    this.#inflater = inflater;
    this.#kept = [];
    this.#keptFrom = 0;
    this.#given = 0;
    this.#ended = false;
    this.#error = null;
    this.#crc = 0;
    this.#size = 0;
    inflater.on('data', (data: Buffer) => {
      this.#crc = crc32(data, this.#crc);
      this.#size = (this.#size + data.length) >>> 0;
      this.push(data);
    });
    inflater.on('error', (error: Error) => {
      this.#error = error;
      this.#writeFailed?.(error);
      this.#wake(error);
    });
    // zlib ends an inflater's output by itself at the end of the deflate data; later input is not used.
    inflater.on('end', () => {
      this.#ended = true;
      this.#wake();
    });
  }

  #wake(error?: Error): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.(error);
  }

  #feed(bytes: Buffer, callback: TransformCallback): void {
    const inflater = this.#inflater!;
    if (this.#error !== null) return callback(this.#error);
    this.#kept.push(bytes);
    this.#given += bytes.length;
    // A damaged member fails the inflater without calling back the write: the failure answers it then.
    let answered = false;
    const answer = (then: () => void) => {
      if (answered) return;
      answered = true;
      this.#writeFailed = null;
      then();
    };
    this.#writeFailed = (error) => answer(() => callback(error));
    inflater.write(bytes, (error) =>
      answer(() => {
        if (error || this.#error) return callback(error ?? this.#error);
        // Bytes the inflater has used are not needed again.
        while (this.#kept.length > 0 && this.#keptFrom + this.#kept[0]!.length <= inflater.bytesWritten) this.#keptFrom += this.#kept.shift()!.length;
        if (this.#ended) return this.#afterMember(callback);
        if (inflater.bytesWritten < this.#given) {
          this.#waiting = (failure) => (failure ? callback(failure) : this.#afterMember(callback));
          return;
        }
        callback();
      }),
    );
  }

  /** The member's deflate data ended: what the inflater did not use is its trailer and what follows. */
  #afterMember(callback: TransformCallback): void {
    const inflater = this.#inflater!;
    const kept = this.#kept.length === 1 ? this.#kept[0]! : Buffer.concat(this.#kept);
    this.#pending = kept.subarray(inflater.bytesWritten - this.#keptFrom);
    this.#kept = [];
    this.#inflater = null;
    this.#state = 'trailer';
    this.#advance(callback);
  }
}
