/**
 * Upgrading a B-Tree file of format version 1 to the current format (LAYOUT.md "Format versions").
 *
 * Version 1 differs from version 2 in the page checksum only: CRC-32C (Castagnoli) of bytes
 * [4, pageSize) instead of zlib's CRC-32 of the same bytes. Every other byte stays as it is, so the
 * upgrade rewrites each page's first four bytes and, in the two meta pages, the version field.
 *
 * Crash safety: the original is never written. The upgraded copy is written beside it
 * (`FILE.upgrade`), fsynced, opened and checked in full (`check`: every reachable page's checksum, key
 * order, balance, free-list accounting); only a clean copy is renamed over the original and the
 * directory fsynced. A kill at any point leaves either the untouched original or the whole upgraded
 * file, plus at most a stale `FILE.upgrade` that the next upgrade replaces.
 *
 * A page whose version-1 checksum does not match is copied as it is: a page no commit points at (one a
 * crashed commit tore, never reachable) is harmless; one that the tree does reach fails the check of
 * the copy, and the upgrade refuses with BTREE_CORRUPT, leaving the original as it was.
 */
import { crc32 } from 'node:zlib';
import { dirname } from 'node:path';
import { crc32c } from '../storage/crc32c.js';
import { fsyncDir, nodeFileOps, readFully, writeFully, type FileOps } from '../storage/file-ops.js';
import { BTreeError } from './errors.js';
import { FORMAT_VERSION, MAX_PAGE_SIZE, META_PROBE_BYTES, MIN_PAGE_SIZE, UPGRADABLE_VERSION, isValidPageSize, probeMetaVersion, setU32, u32 } from './page-codec.js';

import { BTree } from './tree.js';

/** Byte offsets shared by every format version (LAYOUT.md "Page header", "Meta page"). */
const OFF_KIND = 4;
const KIND_META = 1;
const OFF_VERSION = 24;
const OFF_PAGE_SIZE = 28;

/** Pages converted per read and write. */
const CHUNK_PAGES = 256;

export interface UpgradeReport {
  readonly file: string;
  /** The version the file had; equal to `toVersion` when there was nothing to do. */
  readonly fromVersion: number;
  readonly toVersion: number;
  readonly upgraded: boolean;
  readonly pages: number;
  /** Pages whose version-1 checksum did not match, copied unchanged (none of them reachable: the copy checked clean). */
  readonly unreadablePages: number;
  readonly keys: number;
}

/** The file's format version and page size from its meta pages, without trusting either checksum. */
export function formatOf(io: FileOps, fd: number, path: string): { version: number; pageSize: number } {
  const probe = (offset: number): { version: number; pageSize: number } | null => {
    const head = new Uint8Array(META_PROBE_BYTES);
    if (io.read(fd, head, 0, head.length, offset) < head.length) return null;
    const version = probeMetaVersion(head);
    const pageSize = u32(head, OFF_PAGE_SIZE);
    return version === null || !isValidPageSize(pageSize) ? null : { version, pageSize };
  };
  const slot0 = probe(0);
  if (slot0 !== null) return slot0;
  for (let size = MIN_PAGE_SIZE; size <= MAX_PAGE_SIZE; size *= 2) {
    const slot1 = probe(size);
    if (slot1 !== null && slot1.pageSize === size) return slot1;
  }
  throw new BTreeError('BTREE_CORRUPT', `${path} is not a Petrel B-Tree (no meta page with its magic and a valid page size)`, { page: 0 });
}

/** One page re-sealed for the current format, in place; false when its version-1 checksum fails (left as it is). */
export function resealFormat1Page(page: Uint8Array): boolean {
  if (u32(page, 0) !== crc32c(page, 4, page.length)) return false;
  if (page[OFF_KIND] === KIND_META) setU32(page, OFF_VERSION, FORMAT_VERSION);
  setU32(page, 0, crc32(page.subarray(4)));
  return true;
}

/**
 * Upgrades `path` in place (see the header comment). A file already of the current format is left
 * alone (`upgraded: false`). Throws BTREE_VERSION for a version it does not know, BTREE_CORRUPT for a
 * file that is not a B-Tree or whose upgraded copy does not check clean. The queue server must not
 * have the file open (stop it first).
 */
export function upgradeBtreeFile(path: string, io: FileOps = nodeFileOps): UpgradeReport {
  const fd = io.open(path, 'r');
  let format: { version: number; pageSize: number };
  let size: number;
  try {
    format = formatOf(io, fd, path);
    size = io.size(fd);
    if (format.version === FORMAT_VERSION) {
      return { file: path, fromVersion: FORMAT_VERSION, toVersion: FORMAT_VERSION, upgraded: false, pages: Math.floor(size / format.pageSize), unreadablePages: 0, keys: keysOf(path) };
    }
    if (format.version !== UPGRADABLE_VERSION) {
      throw new BTreeError('BTREE_VERSION', `${path} is a Petrel B-Tree of format version ${format.version}; this Petrel reads version ${FORMAT_VERSION} and upgrades version ${UPGRADABLE_VERSION} only`);
    }
    const copy = `${path}.upgrade`;
    io.unlink(copy);
    const out = io.open(copy, 'wx', 0o600);
    let unreadablePages = 0;
    try {
      const { pageSize } = format;
      const chunk = new Uint8Array(pageSize * CHUNK_PAGES);
      for (let offset = 0; offset < size; offset += chunk.length) {
        const length = Math.min(chunk.length, size - offset);
        readWhole(io, fd, chunk, length, offset);
        const whole = Math.floor(length / pageSize);
        for (let p = 0; p < whole; p++) if (!resealFormat1Page(chunk.subarray(p * pageSize, (p + 1) * pageSize))) unreadablePages++;
        // A partial page at the end (a crash while the file grew) is copied as it is; no commit points at it.
        writeFully(io, out, chunk.subarray(0, length), offset);
      }
      io.fsync(out);
    } finally {
      io.close(out);
    }
    let keys: number;
    try {
      keys = verifiedKeys(copy);
    } catch (error) {
      io.unlink(copy);
      throw error;
    }
    io.rename(copy, path);
    fsyncDir(io, dirname(path));
    return { file: path, fromVersion: format.version, toVersion: FORMAT_VERSION, upgraded: true, pages: Math.floor(size / format.pageSize), unreadablePages, keys };
  } finally {
    io.close(fd);
  }
}

/** Opens the upgraded copy read-only and checks it whole; its key count, or BTREE_CORRUPT naming the first faults. */
function verifiedKeys(copy: string): number {
  const tree = BTree.open(copy, { create: false, readOnly: true, cachePages: 256 });
  try {
    const report = tree.check();
    if (!report.ok) {
      const first = report.faults.slice(0, 3).map((fault) => `${fault.code}${fault.page === undefined ? '' : ` (page ${fault.page})`}: ${fault.message}`);
      throw new BTreeError('BTREE_CORRUPT', `the upgraded copy does not check clean, so the original is left as it was: ${first.join('; ')}${report.faults.length > 3 ? ` and ${report.faults.length - 3} more` : ''}`);
    }
    return tree.stats().keys;
  } finally {
    tree.close();
  }
}

function keysOf(path: string): number {
  const tree = BTree.open(path, { create: false, readOnly: true, cachePages: 16 });
  try {
    return tree.stats().keys;
  } finally {
    tree.close();
  }
}

function readWhole(io: FileOps, fd: number, into: Uint8Array, length: number, position: number): void {
  const read = readFully(io, fd, into.subarray(0, length), position);
  if (read < length) throw new BTreeError('BTREE_CORRUPT', `the file ended at ${position + read} bytes while it was read`);
}
