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

/** Its size: a run of up to 64 pages of 16 KiB per write call. */
export const STAGING_BYTES = 1 << 20;

let staging: Buffer | null = null;

/** The buffer (STAGING_BYTES long), allocated on first use and kept for the life of the process. */
export function stagingBuffer(): Buffer {
  staging ??= Buffer.allocUnsafeSlow(STAGING_BYTES);
  return staging;
}
