/**
 * robots.txt fetches kept on disk, so a restarted queue server keeps its robots cache: the raw
 * outcome of each origin's last fetch in one B-Tree file (`robots.btree`, 16 KiB pages); rules are
 * parsed again from it (robots.ts), and its age decides whether it still holds.
 *
 * Why one tree and not a file per origin (as before): a new origin's robots.txt cost a file written,
 * fsynced and renamed in the group commit, on the main thread (22 % of the queue server's time at
 * 2 million known URLs, about one fsync per new host); in the tree a commit of any number of them is
 * one copy-on-write commit of a few pages (two fsyncs).
 *
 * Layout: the outcome as JSON (UTF-8), cut into chunks that fit a value (at most 4,082 bytes at 16 KiB
 * pages; a robots.txt may be 512 KiB):
 *
 *   key (8 bytes)                          value
 *   xxHash64(origin)                       00 count:u16 crc:u32 chunk 0    (the head)
 *   xxHash64(origin "#" i), 1 <= i < count 01 crc:u32 chunk i
 *
 * `crc` is the CRC-32C of the whole JSON: a chunk of another fetch (or another origin, a hash
 * collision) does not match it, and the outcome is then absent (the origin's robots.txt is fetched
 * again), never mixed. A commit writes the head and every chunk of each saved outcome and deletes
 * the chunks its previous fetch had beyond the new count.
 *
 * Write path: `save` stages the outcome in memory; `commit` (part of the crawl's group commit) writes
 * every staged one in one atomic B-Tree commit. A commit that fails keeps them staged for the next
 * one, so a full disk never makes a results post fail half-applied. Memory: one staged outcome per
 * origin (the latest), at most 512 KiB of robots.txt each, for one commit window; the tree's page
 * cache (256 pages, 4 MiB).
 *
 * Data directories of earlier versions hold `robots/`, one JSON file per origin: `open` moves them
 * into the tree (committed), then removes the files and the directory; a kill in between moves the
 * rest at the next start, the same outcomes again.
 *
 * Parsed files: the store also holds the bounded cache of parsed rules (parsed-robots-cache.ts), so an
 * origin's rules that fell out of it are parsed again from the tree here (`parsedRules`), the one
 * place robots.txt outcomes are read back.
 */
import { readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { BTree } from '../btree/index.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';
import { readJsonFile } from '../storage/atomic-file.js';
import { crc32c } from '../storage/crc32c.js';
import { fsyncDir, nodeFileOps, type FileOps } from '../storage/file-ops.js';
import { recoverAfterFailedWrite } from '../storage/staged-tree.js';
import { ParsedRobotsCache, type ParsedRobotsCacheOptions } from './parsed-robots-cache.js';
import { rulesFromFetch, type RobotsFetchOutcome, type RobotsPolicy, type RobotsRules } from './robots.js';

type ParsedRules = Extract<RobotsRules, { kind: 'rules' }>;

export interface StoredRobots extends RobotsFetchOutcome {
  /** ms since epoch */
  readonly fetchedAt: number;
}

const PAGE_SIZE = 16384;
/** Bytes of JSON per chunk: a value is at most 4,082 bytes at 16 KiB pages, less the chunk's header (7). */
const CHUNK_BYTES = 4064;
const HEAD = 0;
const CONTINUATION = 1;

export interface RobotsStoreOptions {
  readonly io?: FileOps;
  readonly parsedCache?: ParsedRobotsCacheOptions;
  /** A `robots/` directory of an earlier version (one JSON file per origin), moved into the tree on open. */
  readonly legacyDir?: string;
  readonly cachePages?: number;
}

export class RobotsStore {
  readonly #tree: BTree;
  readonly #io: FileOps;
  /** origin -> outcome saved and not yet committed; the latest per origin. */
  readonly #pending = new Map<string, StoredRobots>();
  readonly #parsed: ParsedRobotsCache<ParsedRules>;

  private constructor(tree: BTree, io: FileOps, parsedCache: ParsedRobotsCacheOptions | undefined) {
    this.#tree = tree;
    this.#io = io;
    this.#parsed = new ParsedRobotsCache(parsedCache);
  }

  /** Opens (or creates) `robots.btree` at `path`, moving the files of a `legacyDir` into it first. */
  static open(path: string, options: RobotsStoreOptions = {}): RobotsStore {
    const io = options.io ?? nodeFileOps;
    const store = new RobotsStore(BTree.open(path, { pageSize: PAGE_SIZE, cachePages: options.cachePages ?? 256, io }), io, options.parsedCache);
    if (options.legacyDir !== undefined) {
      try {
        store.#moveLegacy(options.legacyDir);
      } catch (error) {
        store.close();
        throw error;
      }
    }
    return store;
  }

  /** An existing `robots.btree` for reading only (checks, tests, beside a running queue server). */
  static openReadOnly(path: string): RobotsStore {
    return new RobotsStore(BTree.open(path, { create: false, readOnly: true, cachePages: 64 }), nodeFileOps, undefined);
  }

  /** Stages the outcome for the next commit; `load` sees it at once. */
  save(robots: StoredRobots): void {
    this.#pending.set(robots.origin, robots);
  }

  /** Writes every staged outcome in one atomic B-Tree commit; on failure all stay staged for the next commit. */
  commit(): void {
    if (this.#pending.size === 0) return;
    if (this.#tree.failed) this.#tree.recover();
    const written = [...this.#pending];
    // Encoded (and the previous fetch's chunk count read) before the write: the write batch only puts and deletes.
    const changes = written.map(([origin, robots]) => ({ origin, chunks: encodeChunks(robots), before: this.#chunkCount(origin) }));
    try {
      this.#tree.write((batch) => {
        for (const { origin, chunks, before } of changes) {
          chunks.forEach((chunk, i) => batch.put(chunkKey(origin, i), chunk));
          for (let i = chunks.length; i < before; i++) batch.delete(chunkKey(origin, i));
        }
      });
    } catch (error) {
      recoverAfterFailedWrite(this.#tree, error);
      throw error;
    }
    for (const [origin, robots] of written) if (this.#pending.get(origin) === robots) this.#pending.delete(origin);
  }

  load(origin: string): StoredRobots | null {
    const pending = this.#pending.get(origin);
    if (pending !== undefined) return pending;
    const stored = this.#read(origin);
    return stored !== null && stored.origin === origin ? stored : null;
  }

  /**
   * `load` of many origins (a queue server start takes up every origin of its frontier): the heads in
   * one ordered pass over the tree (BTree.readSorted) instead of a descent and a random leaf read each;
   * `found` is told each origin's outcome or null, in no particular order. An outcome of several chunks
   * is assembled after the pass (its chunks are read one by one).
   */
  loadMany(origins: readonly string[], found: (origin: string, stored: StoredRobots | null) => void): void {
    const unstaged: { origin: string; key: UrlHash }[] = [];
    for (const origin of origins) {
      const pending = this.#pending.get(origin);
      if (pending !== undefined) found(origin, pending);
      else unstaged.push({ origin, key: chunkKey(origin, 0) });
    }
    unstaged.sort((a, b) => Buffer.compare(a.key, b.key));
    const chunked: string[] = [];
    this.#tree.readSorted(
      unstaged.map(({ key }) => key),
      (i, head) => {
        const origin = unstaged[i]!.origin;
        if (head === null || head[0] !== HEAD) found(origin, null);
        else if (Buffer.from(head.buffer, head.byteOffset, head.byteLength).readUInt16BE(1) > 1) chunked.push(origin);
        else {
          // One chunk: assembled from the head alone, without reading the tree.
          const stored = this.#assemble(head, origin);
          found(origin, stored !== null && stored.origin === origin ? stored : null);
        }
      },
    );
    for (const origin of chunked) found(origin, this.load(origin));
  }

  /** Puts the rules just parsed from the fetch of `origin` made at `fetchedAt` into the cache of parsed files. */
  rememberParsed(origin: string, fetchedAt: number, rules: ParsedRules, chars: number): void {
    this.#parsed.set(origin, fetchedAt, rules, chars);
  }

  /**
   * The rules parsed from the fetch of `origin` made at `fetchedAt`: from the cache, or parsed again
   * from the stored outcome (staged or on disk) and cached. The store keeps every fetch it was handed, the
   * latest per origin, so a miss that finds another fetch, or none, is a bug.
   */
  parsedRules(origin: string, fetchedAt: number, policy: RobotsPolicy): ParsedRules {
    const cached = this.#parsed.get(origin, fetchedAt);
    if (cached !== undefined) return cached;
    const stored = this.load(origin);
    const rules = stored === null || stored.fetchedAt !== fetchedAt ? null : rulesFromFetch(stored, policy, stored.fetchedAt);
    if (rules?.kind !== 'rules') throw new Error(`robots.txt of ${origin} fetched at ${fetchedAt} is not the one stored`);
    this.#parsed.set(origin, fetchedAt, rules, stored!.body?.length ?? 0);
    return rules;
  }

  parsedStats(): ReturnType<ParsedRobotsCache<ParsedRules>['stats']> {
    return this.#parsed.stats();
  }

  /** Every committed outcome (checks, tests): the heads in key order, each with its chunks. */
  *entries(): IterableIterator<StoredRobots> {
    for (const [, value] of this.#tree.entries()) {
      if (value[0] !== HEAD) continue;
      const stored = this.#assemble(value);
      if (stored !== null) yield stored;
    }
  }

  check(): ReturnType<BTree['check']> {
    return this.#tree.check();
  }

  stats(): ReturnType<BTree['stats']> {
    return this.#tree.stats();
  }

  /** Commits what is staged, then closes the file (closed even when the commit fails, which throws). */
  close(): void {
    try {
      this.commit();
    } finally {
      this.#tree.close();
    }
  }

  /** The origin's outcome from the tree; null when absent or when its chunks do not match its head. */
  #read(origin: string): StoredRobots | null {
    const head = this.#tree.get(chunkKey(origin, 0));
    return head === null || head[0] !== HEAD ? null : this.#assemble(head, origin);
  }

  /** The outcome a head names, its chunks read by the head's origin (`origin`, or the one in its first chunk). */
  #assemble(head: Uint8Array, origin?: string): StoredRobots | null {
    const view = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
    const count = view.readUInt16BE(1);
    const crc = view.readUInt32BE(3);
    const parts: Buffer[] = [view.subarray(7)];
    let name = origin;
    if (name === undefined && count > 1) {
      // The head alone does not hold the origin's name when the JSON goes on: it is read from the JSON's start.
      const match = /^\{"origin":("(?:[^"\\]|\\.)*")/.exec(parts[0]!.toString('utf8'));
      if (match === null) return null;
      name = JSON.parse(match[1]!) as string;
    }
    for (let i = 1; i < count; i++) {
      const chunk = this.#tree.get(chunkKey(name!, i));
      if (chunk === null || chunk[0] !== CONTINUATION) return null;
      const chunkView = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (chunkView.readUInt32BE(1) !== crc) return null;
      parts.push(chunkView.subarray(5));
    }
    const json = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    if (crc32c(json) !== crc) return null;
    return JSON.parse(json.toString('utf8')) as StoredRobots;
  }

  /** Chunks of the origin's committed outcome (0 when none). */
  #chunkCount(origin: string): number {
    const head = this.#tree.get(chunkKey(origin, 0));
    return head === null || head[0] !== HEAD ? 0 : Buffer.from(head.buffer, head.byteOffset, head.byteLength).readUInt16BE(1);
  }

  /**
   * Moves the files of an earlier version's `robots/` into the tree: staged, committed, then each file
   * removed and the directory too (its parent fsynced). Nothing is read from the directory afterwards.
   */
  #moveLegacy(dir: string): void {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const stored = readJsonFile<StoredRobots>(join(dir, name));
      // A newer outcome of the same origin may be in the tree already (a move cut short, then a crawl).
      if (stored !== null && typeof stored.origin === 'string' && this.#read(stored.origin) === null) this.save(stored);
    }
    this.commit();
    for (const name of names) if (name.endsWith('.json') || name.includes('.json.tmp-')) this.#io.unlink(join(dir, name));
    rmdirQuietly(dir);
    fsyncDir(this.#io, join(dir, '..'));
  }
}

/** Removes the emptied legacy directory (node:fs: FileOps has no rmdir; one left behind costs only its name). */
function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTEMPTY') throw error;
  }
}

/** The key of chunk `i` of an origin's outcome: the origin's hash for the head, else the hash of `origin#i`. */
function chunkKey(origin: string, i: number): UrlHash {
  return urlHash(i === 0 ? origin : `${origin}#${i}`);
}

/** The outcome as JSON cut into chunks, each with its header (module comment). */
function encodeChunks(robots: StoredRobots): Buffer[] {
  // `origin` first: a head read without knowing its origin finds the name at the JSON's start.
  const json = Buffer.from(JSON.stringify({ origin: robots.origin, status: robots.status, errorCode: robots.errorCode, body: robots.body, fetchedAt: robots.fetchedAt }), 'utf8');
  const crc = crc32c(json);
  const count = Math.max(1, Math.ceil(json.length / CHUNK_BYTES));
  if (count > 0xffff) throw new Error(`robots.txt outcome of ${robots.origin}: ${json.length} bytes is more than the store holds`);
  const chunks: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const part = json.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES);
    const header = Buffer.allocUnsafe(i === 0 ? 7 : 5);
    header[0] = i === 0 ? HEAD : CONTINUATION;
    if (i === 0) {
      header.writeUInt16BE(count, 1);
      header.writeUInt32BE(crc, 3);
    } else header.writeUInt32BE(crc, 1);
    chunks.push(Buffer.concat([header, part]));
  }
  return chunks;
}
