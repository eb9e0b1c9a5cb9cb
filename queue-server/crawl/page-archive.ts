/**
 * The page archive: an append-only file of page records, one JSON object per line
 * (`pages.jsonl` in the data directory), read back by `petrel export`.
 *
 * Write path: `append` only queues records in memory; `commit` (the crawl's group commit, before the
 * trees) writes them in one positional write at the end of the durable part and fsyncs. A new file's
 * directory entry is fsynced when it is created, so the file itself survives a power loss.
 *
 * Failure model: if the write or the fsync fails (a full disk, an I/O error), the queued records stay
 * queued, the file is cut back to its durable length (best effort) and the error is thrown; the next
 * `commit` writes them again at the same offset, so a failure never leaves a record twice or a torn
 * line in the middle. Memory: the records of one commit window (the crawl refuses new results while
 * its commits fail).
 *
 * Crash model: a crash can leave a partial last line (or whole lines of a commit that never finished);
 * on open the file is cut back to its last complete line, and a reader skips a partial last line.
 * Nothing durable is ever rewritten.
 */
import { createReadStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fsyncDir, nodeFileOps, writeFully, type FileOps } from '../storage/file-ops.js';
import type { PageRecord } from './outcome.js';

export class PageArchive {
  readonly path: string;
  readonly #io: FileOps;
  #fd: number;
  /** Bytes of the file that hold committed records: where the next commit writes. */
  #durableBytes: number;
  #records = 0;
  /** Lines appended and not yet committed. */
  #pending: string[] = [];
  #pendingRecords = 0;

  private constructor(path: string, io: FileOps, fd: number, durableBytes: number) {
    this.path = path;
    this.#io = io;
    this.#fd = fd;
    this.#durableBytes = durableBytes;
  }

  static open(path: string, options: { io?: FileOps } = {}): PageArchive {
    const io = options.io ?? nodeFileOps;
    const created = !io.exists(path);
    const fd = io.open(path, created ? 'w+' : 'r+', 0o600);
    try {
      if (created) fsyncDir(io, dirname(resolve(path)));
      return new PageArchive(path, io, fd, cutToLastCompleteLine(io, fd));
    } catch (error) {
      io.close(fd);
      throw error;
    }
  }

  /** Records made durable by `commit` since open. */
  get recordsWritten(): number {
    return this.#records;
  }

  /** Queues records for the next commit. */
  append(records: readonly PageRecord[]): void {
    if (records.length === 0) return;
    let text = '';
    for (const record of records) text += `${JSON.stringify(record)}\n`;
    this.#pending.push(text);
    this.#pendingRecords += records.length;
  }

  /** Writes the queued records and fsyncs; on failure they stay queued and the error is thrown. */
  commit(): void {
    if (this.#pending.length === 0) return;
    const bytes = Buffer.from(this.#pending.join(''), 'utf8');
    try {
      writeFully(this.#io, this.#fd, bytes, this.#durableBytes);
      this.#io.fsync(this.#fd);
    } catch (error) {
      try {
        // Tidy only: the next attempt overwrites from #durableBytes anyway, and open cuts torn lines.
        this.#io.ftruncate(this.#fd, this.#durableBytes);
      } catch {
        // The commit's own error is the one to report.
      }
      throw error;
    }
    this.#durableBytes += bytes.length;
    this.#records += this.#pendingRecords;
    this.#pending = [];
    this.#pendingRecords = 0;
  }

  /** Commits what is queued, then closes the file (closed even when the commit fails, which throws). */
  close(): void {
    try {
      this.commit();
    } finally {
      this.#io.close(this.#fd);
    }
  }
}

/** Truncates a partial last line left by a crash; returns the length kept. */
function cutToLastCompleteLine(io: FileOps, fd: number): number {
  const size = io.size(fd);
  if (size === 0) return 0;
  const chunk = Buffer.allocUnsafe(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const length = io.read(fd, chunk, 0, end - start, start);
    const newline = chunk.subarray(0, length).lastIndexOf(0x0a);
    if (newline >= 0) {
      const keep = start + newline + 1;
      if (keep < size) io.ftruncate(fd, keep);
      return keep;
    }
    end = start;
  }
  io.ftruncate(fd, 0);
  return 0;
}

/** Reads every complete record of an archive, in order. */
export async function* readPageArchive(path: string): AsyncGenerator<PageRecord> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.length === 0) continue;
    try {
      yield JSON.parse(line) as PageRecord;
    } catch {
      // Only a partial last line can fail to parse (see the crash model above).
      return;
    }
  }
}
