/**
 * The page archive: an append-only file of page records, one JSON object per line
 * (`pages.jsonl` in the data directory), read back by `petrel export`.
 *
 * Crash model: records are appended with one write per results batch. A crash can leave a partial
 * last line; on open the file is cut back to its last complete line, and a reader skips a partial
 * last line. Nothing earlier is ever rewritten.
 */
import { closeSync, createReadStream, existsSync, fstatSync, fsyncSync, openSync, readSync, ftruncateSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { PageRecord } from './outcome.js';

export class PageArchive {
  readonly path: string;
  #fd: number;
  #records = 0;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.#fd = fd;
  }

  static open(path: string): PageArchive {
    const fd = openSync(path, existsSync(path) ? 'r+' : 'w+', 0o600);
    cutToLastCompleteLine(fd);
    return new PageArchive(path, openAppend(fd, path));
  }

  get recordsWritten(): number {
    return this.#records;
  }

  append(records: readonly PageRecord[]): void {
    if (records.length === 0) return;
    let text = '';
    for (const record of records) text += `${JSON.stringify(record)}\n`;
    writeSync(this.#fd, text);
    this.#records += records.length;
  }

  sync(): void {
    fsyncSync(this.#fd);
  }

  close(): void {
    fsyncSync(this.#fd);
    closeSync(this.#fd);
  }
}

function openAppend(fd: number, path: string): number {
  closeSync(fd);
  return openSync(path, 'a', 0o600);
}

/** Truncates a partial last line left by a crash. */
function cutToLastCompleteLine(fd: number): void {
  const size = fstatSync(fd).size;
  if (size === 0) return;
  const chunk = Buffer.allocUnsafe(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const length = readSync(fd, chunk, 0, end - start, start);
    const newline = chunk.subarray(0, length).lastIndexOf(0x0a);
    if (newline >= 0) {
      const keep = start + newline + 1;
      if (keep < size) ftruncateSync(fd, keep);
      return;
    }
    end = start;
  }
  ftruncateSync(fd, 0);
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
