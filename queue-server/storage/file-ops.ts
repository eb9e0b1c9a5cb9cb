/**
 * The file operations the stores write through: a seam between the write path and node:fs, so that a
 * test can watch their order (data fsynced before the meta that points to it, archive before trees)
 * and make any one of them fail the way a full or failing disk does (ENOSPC, EIO, a short write)
 * without patching node:fs. Production code uses `nodeFileOps`; every store takes an `io` option that
 * defaults to it. Synchronous like the stores: a commit must not interleave with anything else (the
 * one exception, `fsyncAsync`, serves the WARC writer's commitAsync: warc/warc-writer.ts).
 *
 * Only what the stores do to their files is here; reading a whole JSON file or listing a directory
 * is not part of the write path and stays on node:fs.
 */
import * as fs from 'node:fs';

export interface FileOps {
  open(path: string, flags: string, mode?: number): number;
  close(fd: number): void;
  /** Reads at `position`; returns the bytes read (0 at the end of the file). */
  read(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  /** Writes at `position` (null: at the file position); returns the bytes written, which may be fewer. */
  write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number;
  fsync(fd: number): void;
  /** fsync on libuv's thread pool (the event loop goes on meanwhile); absent: callers fall back to `fsync`. */
  fsyncAsync?(fd: number): Promise<void>;
  ftruncate(fd: number, length: number): void;
  /** The file's size in bytes (fstat). */
  size(fd: number): number;
  rename(from: string, to: string): void;
  link(existing: string, path: string): void;
  /** Removes a file; absent is fine. */
  unlink(path: string): void;
  exists(path: string): boolean;
  /** Creates the directory and missing parents; existing is fine. */
  mkdir(path: string, mode: number): void;
}

export const nodeFileOps: FileOps = {
  open: (path, flags, mode) => fs.openSync(path, flags, mode),
  close: (fd) => fs.closeSync(fd),
  read: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  write: (fd, buffer, offset, length, position) => fs.writeSync(fd, buffer, offset, length, position),
  fsync: (fd) => fs.fsyncSync(fd),
  fsyncAsync: (fd) =>
    new Promise<void>((resolve, reject) => {
      fs.fsync(fd, (error) => (error === null ? resolve() : reject(error)));
    }),
  ftruncate: (fd, length) => fs.ftruncateSync(fd, length),
  size: (fd) => fs.fstatSync(fd).size,
  rename: (from, to) => fs.renameSync(from, to),
  link: (existing, path) => fs.linkSync(existing, path),
  unlink: (path) => fs.rmSync(path, { force: true }),
  exists: (path) => fs.existsSync(path),
  mkdir: (path, mode) => {
    fs.mkdirSync(path, { recursive: true, mode });
  },
};

/** Writes all of `bytes` at `position`, however many calls a short write takes. */
export function writeFully(io: FileOps, fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.length) done += io.write(fd, bytes, done, bytes.length - done, position + done);
}

/** Reads `into` whole from `position`, however many calls it takes; returns the bytes read, fewer only at the end of the file. */
export function readFully(io: FileOps, fd: number, into: Uint8Array, position: number): number {
  let done = 0;
  while (done < into.length) {
    const read = io.read(fd, into, done, into.length - done, position + done);
    if (read === 0) break;
    done += read;
  }
  return done;
}

/**
 * Makes a directory's entries durable: after creating, renaming or linking a file, the new name is
 * only on disk once its directory is fsynced (POSIX fsync(2); ext4 and XFS lose a fresh rename or
 * create on power loss otherwise).
 */
export function fsyncDir(io: FileOps, dir: string): void {
  const fd = io.open(dir, 'r');
  try {
    io.fsync(fd);
  } finally {
    io.close(fd);
  }
}
