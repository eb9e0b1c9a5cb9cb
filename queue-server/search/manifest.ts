/**
 * The manifest and the deletion files: which segments make up the index at its last commit, and which
 * of their entries are deleted.
 *
 * MANIFEST is JSON followed by a line with the CRC-32C of the JSON bytes (8 hex digits). It is
 * replaced atomically at every checkpoint and every merge install (commits go to the commit log,
 * commit-log.ts, which the manifest's `log` says where to replay from): written to MANIFEST.tmp, fsynced,
 * renamed over MANIFEST, then the directory is fsynced so the rename itself is durable. Every file it
 * names was fsynced before it was written, and no file it names is changed or removed until a later
 * manifest that does not name it is durable. So a kill at any instant reopens to the last manifest
 * that was renamed into place, whole.
 *
 * A deletion file (`seg-000012-000034.del`: segment 12, written at generation 34) lists deleted entry
 * numbers of one segment: magic "PETRELDL", u32 version, u32 segment id, u32 entry count of the
 * segment, u32 number of deletions, the entry numbers ascending as varint deltas (the first + 1), and
 * the CRC-32C of everything before it (u32). Segments are immutable, so deletions are written as a new
 * file per generation, never in place.
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32c } from '../storage/crc32c.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { IndexError } from './errors.js';

export const MANIFEST_FILE = 'MANIFEST';
export const MANIFEST_VERSION = 1;

export interface ManifestSegment {
  readonly id: number;
  readonly file: string;
  readonly entries: number;
  readonly pages: number;
  readonly anchors: number;
  readonly bytes: number;
  /** Deletion file, or null when none of its entries is deleted. */
  readonly deletions: string | null;
  readonly deleted: number;
}

export interface Manifest {
  readonly format: 'petrel-index';
  readonly version: number;
  /** Incremented by every manifest write (commit or merge install). */
  readonly generation: number;
  /** Incremented by every commit only: what a writer prints as acknowledged. */
  readonly commits: number;
  /** Next number for a segment file. */
  readonly nextSegmentId: number;
  readonly segments: readonly ManifestSegment[];
  /**
   * The first commit log to replay over these segments (`log-NNNNNN.plg`, commit-log.ts): it and every
   * later one that exists. Absent in indexes written before the log: 1.
   */
  readonly log?: number;
}

export function emptyManifest(): Manifest {
  return { format: 'petrel-index', version: MANIFEST_VERSION, generation: 0, commits: 0, nextSegmentId: 1, segments: [], log: 1 };
}

export function segmentFileName(id: number): string {
  return `seg-${String(id).padStart(6, '0')}.psg`;
}

export function deletionFileName(id: number, generation: number): string {
  return `seg-${String(id).padStart(6, '0')}-${String(generation).padStart(6, '0')}.del`;
}

/** The manifest of `dir`, or null when the directory has none (a new index). */
export function readManifest(dir: string): Manifest | null {
  let text: string;
  try {
    text = readFileSync(join(dir, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const cut = text.lastIndexOf('\n', text.length - 2);
  const json = cut < 0 ? '' : text.slice(0, cut);
  const crc = text.slice(cut + 1).trim();
  if (!/^[0-9a-f]{8}$/.test(crc) || Number.parseInt(crc, 16) !== crc32c(Buffer.from(json, 'utf8'))) {
    throw new IndexError('INDEX_CORRUPT', `${join(dir, MANIFEST_FILE)}: checksum mismatch`);
  }
  const manifest = JSON.parse(json) as Manifest;
  if (manifest.format !== 'petrel-index' || manifest.version !== MANIFEST_VERSION) {
    throw new IndexError('INDEX_CORRUPT', `${join(dir, MANIFEST_FILE)}: not a version ${MANIFEST_VERSION} Petrel index manifest`);
  }
  return manifest;
}

/** Replaces the manifest atomically and durably (the four steps in the header comment). */
export function writeManifest(dir: string, manifest: Manifest): void {
  const json = JSON.stringify(manifest);
  const crc = crc32c(Buffer.from(json, 'utf8')).toString(16).padStart(8, '0');
  const temporary = join(dir, `${MANIFEST_FILE}.tmp`);
  writeFileDurable(temporary, Buffer.from(`${json}\n${crc}\n`, 'utf8'));
  renameSync(temporary, join(dir, MANIFEST_FILE));
  fsyncDirectory(dir);
}

export function writeFileDurable(path: string, bytes: Uint8Array, flags = 'w'): void {
  const fd = openSync(path, flags, 0o600);
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const DELETION_MAGIC = 'PETRELDL';

export function encodeDeletions(segmentId: number, entries: number, deleted: readonly number[]): Uint8Array {
  const out = new ByteWriter(24 + deleted.length * 2);
  out.bytes(Buffer.from(DELETION_MAGIC, 'latin1'));
  out.u32(1);
  out.u32(segmentId);
  out.u32(entries);
  out.u32(deleted.length);
  let previous = -1;
  for (const entry of deleted) {
    out.varint(entry - previous);
    previous = entry;
  }
  out.u32(crc32c(out.view()));
  return out.toBytes();
}

/** Deleted entry numbers, ascending; throws INDEX_CORRUPT when the file does not belong to the segment or is damaged. */
export function decodeDeletions(bytes: Uint8Array, segmentId: number, entries: number, file: string): number[] {
  const corrupt = (message: string) => new IndexError('INDEX_CORRUPT', `${file}: ${message}`);
  if (bytes.length < 24) throw corrupt('too short');
  const body = bytes.subarray(0, bytes.length - 4);
  const stored = new ByteReader(bytes, bytes.length - 4).u32();
  if (crc32c(body) !== stored) throw corrupt('checksum mismatch');
  if (Buffer.from(body.subarray(0, 8)).toString('latin1') !== DELETION_MAGIC) throw corrupt('bad magic');
  const reader = new ByteReader(body, 8);
  if (reader.u32() !== 1) throw corrupt('unknown version');
  if (reader.u32() !== segmentId) throw corrupt(`belongs to another segment`);
  if (reader.u32() !== entries) throw corrupt(`written for a segment of another size`);
  const count = reader.u32();
  const out: number[] = [];
  let previous = -1;
  for (let i = 0; i < count; i++) {
    const delta = reader.varint();
    if (delta < 1) throw corrupt('entries not ascending');
    previous += delta;
    if (previous >= entries) throw corrupt(`entry ${previous} beyond the segment's ${entries}`);
    out.push(previous);
  }
  if (!reader.done) throw corrupt('trailing bytes');
  return out;
}

/** Files in `dir` that look like index files (segments, deletions, temporary manifests). */
export function indexFiles(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^seg-\d{6}(-\d{6}\.del|\.psg)$/.test(name) || name.startsWith(`${MANIFEST_FILE}.tmp`));
}
