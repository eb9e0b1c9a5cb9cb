/**
 * One buffer, reused by the synchronous write paths that join many small pieces into a few large
 * writes: the pager's runs of consecutive pages, the insert log's frames of a commit.
 *
 * Why: each of those writes used to allocate a Buffer of its own and drop it. A 1,000,000-URL inject
 * made 1.1 GB of them (about 4,200 of 64 KiB to 1.5 MiB, counted with a preload wrapping Buffer's
 * allocators), memory outside the JavaScript heap that lives until the next full collection and
 * leaves the allocator's heap fragmented after it: the queue server's RSS carried it.
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
