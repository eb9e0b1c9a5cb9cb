/**
 * Numbered log files beside a B-Tree (`crawldb.inserts-N`, `duplicates.bands-N`): finding them, and
 * beginning one durably. The logs that use them (storage/insert-log.ts, crawldb/band-log.ts) own
 * their frames, replay and sweeps; this is only the files' names and birth.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, writeFully, type FileOps } from './file-ops.js';

/** The numbers N of the files `<prefix>N` in `dir` (N a positive integer written plainly), ascending; none when the directory cannot be read. */
export function numberedFiles(dir: string, prefix: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const numbers: number[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const suffix = name.slice(prefix.length);
    const number = Number(suffix);
    if (Number.isSafeInteger(number) && number >= 1 && String(number) === suffix) numbers.push(number);
  }
  return numbers.sort((a, b) => a - b);
}

/**
 * Creates `path` (mode 0600) holding `header`, durable with its directory entry before it is used, and
 * returns its descriptor; on failure nothing is left behind and the error is thrown.
 */
export function beginNumberedFile(io: FileOps, dir: string, path: string, header: Uint8Array): number {
  const fd = io.open(path, 'w+', 0o600);
  try {
    writeFully(io, fd, header, 0);
    io.fsync(fd);
    fsyncDir(io, dir);
  } catch (error) {
    io.close(fd);
    io.unlink(path);
    throw error;
  }
  return fd;
}

export function numberedFilePath(dir: string, prefix: string, number: number): string {
  return join(dir, `${prefix}${number}`);
}
