/**
 * Small files replaced atomically and durably:
 *   1. write a temporary file beside the target and fsync it (its bytes are on disk),
 *   2. rename it over the target (atomic: a reader or a crash sees the old file or the new one),
 *   3. fsync the directory (the rename itself is on disk; without it a power loss may bring the old
 *      file back, or, for a new file, no file at all).
 * A failure at any step leaves the old content in place and removes the temporary file.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fsyncDir, nodeFileOps, writeFully, type FileOps } from './file-ops.js';

export interface AtomicWriteOptions {
  readonly io?: FileOps;
  /** Step 3; off when the caller writes several files of one directory and fsyncs it once after the last. */
  readonly syncDir?: boolean;
  /** Mode of a new file (default 0600: everything in the data directory is private). */
  readonly mode?: number;
}

export function writeFileAtomic(path: string, content: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const io = options.io ?? nodeFileOps;
  const temporary = `${path}.tmp-${process.pid}`;
  try {
    writeDurably(io, temporary, content, 'w', options.mode ?? 0o600);
    io.rename(temporary, path);
  } catch (error) {
    io.unlink(temporary);
    throw error;
  }
  if (options.syncDir ?? true) fsyncDir(io, dirname(resolve(path)));
}

/**
 * Creates a file that must not exist yet (`wx`: fails with EEXIST rather than replace another's), with
 * its content fsynced and its directory entry made durable. A failure removes the partial file.
 */
export function createFileDurably(path: string, content: string | Uint8Array, options: { io?: FileOps; mode?: number } = {}): void {
  const io = options.io ?? nodeFileOps;
  let created = false;
  try {
    writeDurably(io, path, content, 'wx', options.mode ?? 0o600, () => (created = true));
  } catch (error) {
    if (created) io.unlink(path);
    throw error;
  }
  fsyncDir(io, dirname(resolve(path)));
}

/** Creates a directory (and missing parents), each new entry made durable in its parent. */
export function ensureDirDurably(dir: string, options: { io?: FileOps; mode?: number } = {}): void {
  const io = options.io ?? nodeFileOps;
  const missing: string[] = [];
  for (let at = resolve(dir); !io.exists(at); at = dirname(at)) missing.unshift(at);
  for (const level of missing) {
    io.mkdir(level, options.mode ?? 0o700);
    fsyncDir(io, dirname(level));
  }
}

function writeDurably(io: FileOps, path: string, content: string | Uint8Array, flags: string, mode: number, opened?: () => void): void {
  const fd = io.open(path, flags, mode);
  opened?.();
  try {
    writeFully(io, fd, typeof content === 'string' ? Buffer.from(content, 'utf8') : content, 0);
    io.fsync(fd);
  } finally {
    io.close(fd);
  }
}

export function readJsonFile<T>(path: string): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
