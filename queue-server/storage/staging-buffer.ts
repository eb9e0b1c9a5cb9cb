/**
 * One buffer, reused by the synchronous write paths that join many small pieces into a few large
 * writes: the pager's runs of consecutive pages, the insert log's frames of a commit, the WARC
 * writer's runs of records that follow one another in a file.
 *
 * Why: each of those writes used to allocate a Buffer of its own and drop it. A 1,000,000-URL inject
 * (`bench-queue-server inject`) made 1.2 GB of them in about 7,400 writes: 1.07 GB of joined pages
 * (runs of 2 pages to 1.5 MiB) and 0.14 GB of insert-log frames (counted with a preload wrapping
 * Buffer's allocators). That is memory outside the JavaScript heap, garbage until the next full
 * collection, and a copy the allocator zeroes or maps for each write. (The queue server's RSS after
 * that inject did not measurably change: 365 MiB against 360 to 377 before.)
 *
 * Not re-entrant: a caller fills it and writes it within one synchronous call and keeps no view of
 * it (the stores are synchronous: file-ops.ts).
 */
import { writeFully, type FileOps } from './file-ops.js';

/** Its size: a run of up to 64 pages of 16 KiB per write call. */
export const STAGING_BYTES = 1 << 20;

let staging: Buffer | null = null;

/** The buffer (STAGING_BYTES long), allocated on first use and kept for the life of the process. */
export function stagingBuffer(): Buffer {
  staging ??= Buffer.allocUnsafeSlow(STAGING_BYTES);
  return staging;
}

/**
 * Writes `pieces`, which follow one another in the file from `position`, in one write call: a single
 * piece as it is, several joined in the staging buffer (together at most STAGING_BYTES).
 */
export function writeJoined(io: FileOps, fd: number, pieces: readonly Uint8Array[], position: number): void {
  if (pieces.length === 1) {
    writeFully(io, fd, pieces[0]!, position);
    return;
  }
  const buffer = stagingBuffer();
  let at = 0;
  for (const piece of pieces) {
    if (at + piece.length > buffer.length) throw new Error(`bug: a joined write of more than ${buffer.length} bytes`);
    buffer.set(piece, at);
    at += piece.length;
  }
  writeFully(io, fd, buffer.subarray(0, at), position);
}
