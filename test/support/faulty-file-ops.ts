/**
 * A FileOps (queue-server/storage/file-ops.ts) over the real node:fs that records every operation
 * that changes a file, in order, and fails chosen ones the way a failing disk does:
 *  - `enospc`: the write is sent to /dev/full, so the error is the kernel's own ENOSPC;
 *  - `short-write`: half of the bytes reach the file (a real, torn write) and the call reports that;
 *    the next write to that file then fails with the kernel's ENOSPC, as on a disk that just filled;
 *  - `eio`: an fsync fails with EIO (shaped like Node's own errors: code, errno, syscall), as after a
 *    lost write-back. No real device can be made to do that on demand without root.
 * Reads pass through unrecorded.
 */
import * as fs from 'node:fs';
import { resolve } from 'node:path';
import { nodeFileOps, type FileOps } from '../../queue-server/storage/file-ops.js';

export type FileOpKind = 'open' | 'write' | 'fsync' | 'ftruncate' | 'rename' | 'link' | 'unlink' | 'mkdir';

export interface FileOp {
  readonly kind: FileOpKind;
  /** Absolute path of the file (for rename: the source). */
  readonly path: string;
  /** write: byte offset (null: the file position) and length asked for. */
  readonly position?: number | null;
  readonly length?: number;
  /** rename, link: the target. */
  readonly to?: string;
}

export type Fault = 'enospc' | 'short-write' | 'eio';

/** Picks the operations that fail; `index` counts recorded operations from 0. */
export type FaultRule = (op: FileOp, index: number) => Fault | null;

export class FaultyFileOps implements FileOps {
  readonly ops: FileOp[] = [];
  /** Operations that were made to fail, with their fault. */
  readonly failed: { op: FileOp; fault: Fault }[] = [];
  rule: FaultRule | null = null;
  readonly #paths = new Map<number, string>();
  /** fds whose last write was cut short: their next write fails. */
  readonly #torn = new Set<number>();
  readonly #base: FileOps;

  constructor(base: FileOps = nodeFileOps) {
    this.#base = base;
  }

  /** Forgets what was recorded (the rule stays). */
  reset(): void {
    this.ops.length = 0;
    this.failed.length = 0;
  }

  open(path: string, flags: string, mode?: number): number {
    this.#record({ kind: 'open', path: resolve(path) });
    const fd = this.#base.open(path, flags, mode);
    this.#paths.set(fd, resolve(path));
    return fd;
  }

  close(fd: number): void {
    this.#paths.delete(fd);
    this.#torn.delete(fd);
    this.#base.close(fd);
  }

  read(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number {
    return this.#base.read(fd, buffer, offset, length, position);
  }

  write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number {
    const fault = this.#record({ kind: 'write', path: this.#pathOf(fd), position, length });
    if (fault === 'enospc' || this.#torn.has(fd)) {
      this.#torn.delete(fd);
      writeToDevFull(buffer, offset, length);
    }
    if (fault === 'short-write' && length > 1) {
      this.#torn.add(fd);
      return this.#base.write(fd, buffer, offset, Math.floor(length / 2), position);
    }
    return this.#base.write(fd, buffer, offset, length, position);
  }

  fsync(fd: number): void {
    const fault = this.#record({ kind: 'fsync', path: this.#pathOf(fd) });
    if (fault !== null) throw Object.assign(new Error('EIO: i/o error, fsync'), { errno: -5, code: 'EIO', syscall: 'fsync' });
    this.#base.fsync(fd);
  }

  ftruncate(fd: number, length: number): void {
    const fault = this.#record({ kind: 'ftruncate', path: this.#pathOf(fd), length });
    if (fault !== null) throw Object.assign(new Error('EIO: i/o error, ftruncate'), { errno: -5, code: 'EIO', syscall: 'ftruncate' });
    this.#base.ftruncate(fd, length);
  }

  size(fd: number): number {
    return this.#base.size(fd);
  }

  rename(from: string, to: string): void {
    const fault = this.#record({ kind: 'rename', path: resolve(from), to: resolve(to) });
    if (fault !== null) throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { errno: -5, code: 'EIO', syscall: 'rename' });
    this.#base.rename(from, to);
  }

  link(existing: string, path: string): void {
    const fault = this.#record({ kind: 'link', path: resolve(existing), to: resolve(path) });
    if (fault !== null) throw Object.assign(new Error(`EIO: i/o error, link '${existing}' -> '${path}'`), { errno: -5, code: 'EIO', syscall: 'link' });
    this.#base.link(existing, path);
  }

  unlink(path: string): void {
    this.#record({ kind: 'unlink', path: resolve(path) });
    this.#base.unlink(path);
  }

  exists(path: string): boolean {
    return this.#base.exists(path);
  }

  mkdir(path: string, mode: number): void {
    this.#record({ kind: 'mkdir', path: resolve(path) });
    this.#base.mkdir(path, mode);
  }

  #pathOf(fd: number): string {
    return this.#paths.get(fd) ?? `fd:${fd}`;
  }

  #record(op: FileOp): Fault | null {
    const index = this.ops.length;
    this.ops.push(op);
    const fault = this.rule?.(op, index) ?? null;
    if (fault !== null) this.failed.push({ op, fault });
    return fault;
  }
}

/** Throws the kernel's own ENOSPC ("no space left on device"): /dev/full refuses every write. */
function writeToDevFull(buffer: Uint8Array, offset: number, length: number): never {
  const fd = fs.openSync('/dev/full', 'w');
  try {
    fs.writeSync(fd, buffer, offset, Math.max(1, length));
  } finally {
    fs.closeSync(fd);
  }
  throw new Error('/dev/full accepted a write');
}
