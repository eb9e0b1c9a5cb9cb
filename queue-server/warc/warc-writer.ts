/**
 * The WARC writer: appends records (gzip members, built elsewhere) to the current file of the data
 * directory's `warc/`, `petrel-<timestamp>-<serial>.warc.gz`, each file opened by a `warcinfo` record
 * and closed for good when the next record would take it past `maxFileBytes` (WARC 1.1 annex B
 * recommends 1 GB; a capture larger than that gets a file of its own rather than being split).
 *
 * Appends are staged in memory and reach the disk in `commit`, which the queue server's group commit
 * calls before it commits its trees and acknowledges results (queue-server/crawl/crawl.ts `commit`):
 * positional writes, then fsync of every file written (and of the directory when a file was created).
 * `commitAsync` is the same with the files' fsync on the thread pool (crawl-service.ts runs it first
 * in each group commit, holding results back until it resolves, then the rest of the commit).
 * Locations are handed out at `append` and stay true: a commit that fails (ENOSPC, EIO) cuts the file
 * back to its last durable length, keeps everything staged, and throws WARC_WRITE_FAILED with the errno;
 * the next commit writes the same bytes at the same offsets.
 *
 * Crash model (as the page archive's): a kill can leave a cut last member; `open` cuts the newest file
 * back to its last whole member (warc-file.ts `endOfWholeRecords`), removes it if nothing whole is
 * left, and starts a new file for this run, so every file's warcinfo tells the settings of the run that
 * wrote it. An acknowledged record was fsynced before its acknowledgement, so no cut ever reaches it.
 *
 * Memory: the staged members of one commit window.
 */
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fsyncDir, nodeFileOps, type FileOps } from '../storage/file-ops.js';
import { STAGING_BYTES, writeJoined } from '../storage/staging-buffer.js';
import { WarcError } from '../../shared/warc/errors.js';
import { buildWarcinfoRecord, type WarcinfoContent } from '../../shared/warc/exchange.js';
import { parseWarcFileName, warcFileName, type RecordLocation } from './location.js';
import { endOfWholeRecords } from './warc-file.js';

/** 1 GiB: WARC 1.1 annex B's "practical target size" of 1 GB, in binary units like every size here. */
export const DEFAULT_WARC_MAX_FILE_BYTES = 1024 * 1024 * 1024;

export interface WarcWriterOptions {
  /** The `warc/` directory; created (0700) if missing. */
  readonly dir: string;
  /** A file is not grown past this many bytes, except by a capture that is larger on its own. */
  readonly maxFileBytes: number;
  /** What the warcinfo record of each new file says. */
  readonly warcinfo: WarcinfoContent;
  /** The file operations writes go through (node:fs by default; tests inject faults). */
  readonly io?: FileOps;
}

export interface WarcWriterStats {
  /** Bytes and records made durable by this writer (warcinfo records included). */
  readonly bytes: number;
  readonly records: number;
  /** The file records go to now, or null before the first append. */
  readonly currentFile: string | null;
}

export interface Staged {
  readonly file: string;
  readonly offset: number;
  readonly bytes: Uint8Array;
}

interface OpenFile {
  readonly fd: number;
  /** Bytes known to be on disk (written and fsynced). */
  durable: number;
}

export class WarcWriter {
  readonly dir: string;
  readonly #io: FileOps;
  readonly #maxFileBytes: number;
  #warcinfo: WarcinfoContent;
  #nextSerial: number;
  /** The file being appended to: its size counting staged bytes, and whether it holds more than its warcinfo. */
  #current: { name: string; size: number; captures: number } | null = null;
  readonly #files = new Map<string, OpenFile>();
  #staged: Staged[] = [];
  #bytes = 0;
  #records = 0;
  /** A file was created since the directory was last fsynced (its name is not durable yet). */
  #directoryDirty = false;

  private constructor(options: WarcWriterOptions, nextSerial: number) {
    this.dir = options.dir;
    this.#io = options.io ?? nodeFileOps;
    this.#maxFileBytes = options.maxFileBytes;
    this.#warcinfo = options.warcinfo;
    this.#nextSerial = nextSerial;
  }

  /** Opens the directory and repairs the newest file's tail. */
  static open(options: WarcWriterOptions): WarcWriter {
    if (!Number.isSafeInteger(options.maxFileBytes) || options.maxFileBytes < 1) throw new Error(`maxFileBytes ${options.maxFileBytes} is not a positive byte count`);
    const io = options.io ?? nodeFileOps;
    if (!io.exists(options.dir)) {
      io.mkdir(options.dir, 0o700);
      fsyncDir(io, dirname(resolve(options.dir)));
    }
    const files = listWarcFiles(options.dir);
    const newest = files.at(-1);
    if (newest !== undefined) cutTornTail(io, join(options.dir, newest.name));
    return new WarcWriter(options, (newest?.serial ?? 0) + 1);
  }

  /**
   * Stages the records of one capture (kept together in one file, in order) and returns where each
   * will be once committed. `now` (ms since epoch) names a file begun for them.
   */
  append(records: readonly Uint8Array[], now: number): RecordLocation[] {
    const total = records.reduce((sum, record) => sum + record.length, 0);
    if (this.#current === null || (this.#current.captures > 0 && this.#current.size + total > this.#maxFileBytes)) this.#begin(now);
    const current = this.#current!;
    const locations: RecordLocation[] = [];
    for (const bytes of records) {
      locations.push({ file: current.name, offset: current.size, length: bytes.length });
      this.#staged.push({ file: current.name, offset: current.size, bytes });
      current.size += bytes.length;
    }
    current.captures++;
    return locations;
  }

  /** New settings: the next append begins a new file, whose warcinfo says them. */
  setWarcinfo(info: WarcinfoContent): void {
    this.#warcinfo = info;
    this.#current = null;
  }

  get stagedRecords(): number {
    return this.#staged.length;
  }

  stats(): WarcWriterStats {
    return { bytes: this.#bytes, records: this.#records, currentFile: this.#current?.name ?? null };
  }

  /**
   * Makes every staged record durable. On failure throws WarcError WARC_WRITE_FAILED (errno set) after
   * cutting the files back to their durable length; the stage is kept, so calling again retries.
   */
  commit(): void {
    if (this.#staged.length === 0) return;
    const batch = this.#staged.slice();
    const touched = this.#write(batch);
    this.#failing(touched, () => {
      for (const [name, file] of touched) this.#fsyncing(name, () => this.#io.fsync(file.fd));
      this.#syncDirectory();
    });
    this.#settle(batch);
  }

  /**
   * `commit`, with the files' fsync on libuv's thread pool, so the event loop goes on meanwhile: the
   * records are written (positional writes, to the page cache) before this returns its promise, and are
   * durable when it resolves. The caller must stage nothing in between whose durability it relies on
   * from this commit (the crawl holds results back until it resolves: crawl-service.ts); what is staged
   * meanwhile waits for the next commit. Same failure as `commit`.
   */
  async commitAsync(): Promise<void> {
    if (this.#staged.length === 0) return;
    const batch = this.#staged.slice();
    const touched = this.#write(batch);
    const fsyncAsync = this.#io.fsyncAsync?.bind(this.#io);
    try {
      await Promise.all(
        [...touched].map(([name, file]) =>
          fsyncAsync === undefined ? Promise.resolve().then(() => this.#fsyncing(name, () => this.#io.fsync(file.fd))) : fsyncAsync(file.fd).catch((error: unknown) => this.#fsyncing(name, () => { throw error; })),
        ),
      );
    } catch (error) {
      this.#failing(touched, () => {
        throw error;
      });
    }
    this.#failing(touched, () => this.#syncDirectory());
    this.#settle(batch);
  }

  /**
   * Step 1 of a commit: every record of `batch` written where it was placed; the files it touched.
   * Records that follow one another in a file go down in one write (`contiguousRuns`): a page's
   * records are two, and a write call each was most of the writer's system time.
   */
  #write(batch: readonly Staged[]): Map<string, OpenFile> {
    const touched = new Map<string, OpenFile>();
    this.#failing(touched, () => {
      for (const run of contiguousRuns(batch)) {
        const path = join(this.dir, run.file);
        let file = this.#files.get(run.file);
        if (file === undefined) {
          // Read-write, created if missing, never truncated: a retry writes over what a failed attempt left.
          const fd = this.#named(path, () => this.#io.open(path, this.#io.exists(path) ? 'r+' : 'w+', 0o600));
          file = { fd, durable: this.#io.size(fd) };
          this.#files.set(run.file, file);
          this.#directoryDirty = true;
        }
        touched.set(run.file, file);
        this.#named(path, () => writeJoined(this.#io, file!.fd, run.records, run.offset));
      }
    });
    return touched;
  }

  #syncDirectory(): void {
    if (!this.#directoryDirty) return;
    this.#named(this.dir, () => fsyncDir(this.#io, this.dir));
    this.#directoryDirty = false;
  }

  #fsyncing(name: string, fsync: () => void): void {
    this.#named(join(this.dir, name), fsync);
  }

  /** Runs `step`; a failure names `path` (for the error `#failing` throws). */
  #named<T>(path: string, step: () => T): T {
    try {
      return step();
    } catch (error) {
      throw Object.assign(new Error((error as Error).message), { code: (error as NodeJS.ErrnoException).code, path, cause: error });
    }
  }

  /** Runs `step`; on failure cuts `touched` back to their durable length and throws WARC_WRITE_FAILED (the stage kept). */
  #failing(touched: ReadonlyMap<string, OpenFile>, step: () => void): void {
    try {
      step();
    } catch (error) {
      for (const file of touched.values()) {
        try {
          this.#io.ftruncate(file.fd, file.durable);
        } catch {
          // The tail is cut on the next open if not now (see the crash model).
        }
      }
      const errno = (error as NodeJS.ErrnoException).code ?? 'EIO';
      const path = (error as { path?: string }).path ?? this.dir;
      const cause = (error as { cause?: unknown }).cause ?? error;
      throw new WarcError('WARC_WRITE_FAILED', `cannot make WARC records durable in ${path}: ${errno} (${(error as Error).message}); nothing was acknowledged, the records stay staged`, {
        errno,
        cause,
      });
    }
  }

  /** The records of `batch` are durable: counted, and no longer staged (a commit that ran meanwhile may have settled some already). */
  #settle(batch: readonly Staged[]): void {
    const done = new Set(batch);
    const still = this.#staged.filter((staged) => done.has(staged));
    for (const staged of still) {
      const file = this.#files.get(staged.file)!;
      file.durable = Math.max(file.durable, staged.offset + staged.bytes.length);
      this.#bytes += staged.bytes.length;
    }
    this.#records += still.length;
    this.#staged = this.#staged.filter((staged) => !done.has(staged));
    for (const [name, file] of this.#files) {
      if (name === this.#current?.name || this.#staged.some((staged) => staged.file === name)) continue;
      this.#io.close(file.fd);
      this.#files.delete(name);
    }
  }

  /** Commits and closes. */
  close(): void {
    this.commit();
    for (const file of this.#files.values()) this.#io.close(file.fd);
    this.#files.clear();
  }

  #begin(now: number): void {
    const name = warcFileName({ createdAt: now, serial: this.#nextSerial++ });
    const { record } = buildWarcinfoRecord(this.#warcinfo, { filename: name, date: now });
    this.#staged.push({ file: name, offset: 0, bytes: record });
    this.#current = { name, size: record.length, captures: 0 };
  }
}

/**
 * Bytes joined per write at most: the staging buffer's size (storage/staging-buffer.ts), which the
 * writer joins a run's records in, so a commit allocates no copy of what it writes.
 */
export const MAX_WRITE_RUN_BYTES = STAGING_BYTES;

/** Records that follow one another in a file, to go down in one write: `records` are `length` bytes from `offset`. */
export interface WriteRun {
  readonly file: string;
  readonly offset: number;
  readonly records: readonly Uint8Array[];
  readonly length: number;
}

/**
 * `staged`, in order, as runs of records that follow one another in the same file (each next offset is
 * the end of the one before), of MAX_WRITE_RUN_BYTES at most (a record larger than that is a run of
 * its own).
 */
export function contiguousRuns(staged: readonly Staged[]): WriteRun[] {
  const runs: WriteRun[] = [];
  let i = 0;
  while (i < staged.length) {
    const first = staged[i]!;
    let end = first.offset + first.bytes.length;
    let j = i + 1;
    while (j < staged.length) {
      const next = staged[j]!;
      if (next.file !== first.file || next.offset !== end || end + next.bytes.length - first.offset > MAX_WRITE_RUN_BYTES) break;
      end += next.bytes.length;
      j++;
    }
    runs.push({ file: first.file, offset: first.offset, records: staged.slice(i, j).map((s) => s.bytes), length: end - first.offset });
    i = j;
  }
  return runs;
}

/** Petrel WARC files of a directory, oldest (lowest serial) first. */
export function listWarcFiles(dir: string): { name: string; serial: number; createdAt: number }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .flatMap((name) => {
      const id = parseWarcFileName(name);
      return id === null ? [] : [{ name, ...id }];
    })
    .sort((a, b) => a.serial - b.serial || a.createdAt - b.createdAt);
}

/** Cuts a file back to its last whole record; removes it when none is left. */
function cutTornTail(io: FileOps, path: string): void {
  const fd = io.open(path, 'r+');
  let empty = false;
  try {
    const size = io.size(fd);
    const end = endOfWholeRecords(fd);
    if (end < size) {
      io.ftruncate(fd, end);
      io.fsync(fd);
    }
    empty = end === 0;
  } finally {
    io.close(fd);
  }
  if (empty) {
    io.unlink(path);
    fsyncDir(io, dirname(path));
  }
}
