/**
 * The frontier on disk (`frontier.btree`): every queued URL, every URL waiting for a time, and the
 * origin directory, in one B-Tree file of the project's engine (btree/LAYOUT.md), so that the queue
 * server keeps only the heads of its origin queues in memory and a restart reads its queues back
 * instead of deriving them from the whole crawl database.
 *
 * Why the B-Tree and not append-only queue files: a queue must give its URLs back in priority order
 * (depth, or OPIC score) although they arrive in any order; the tree keeps them sorted by key, so a
 * refill is one range read of the origin's keys, deletions cost nothing to compact, and the engine's
 * copy-on-write commit is already crash-safe and tested. Append-only files would need a sort per
 * refill and a compaction of consumed records. The price is the engine's 8-byte keys:
 *
 *   key (8 bytes, big-endian)                                     value
 *   00 00000000 000000       meta                                 JSON: next origin id, waiting, pass
 *   00 00000001 <id:3>       origin directory record              seq:u32 stored:u32 origin (UTF-8)
 *   00 00000002 <id:3>       origin named by the operator          01 (an inject: its host may be on a
 *                            (trusted like a seed's host)            private address, as a seed's may)
 *   00 <at s:4, >= 3> <n:3>  a URL waiting until `at`             at:f64 (ms since epoch) hash:8
 *   <id:3, >= 010000> <bucket:1> <seq:4>   a queued URL           hash:8 priority:f64 depth:u16
 *                                                                 charged:u8 hops:u8 url (UTF-8)
 *
 * A URL too long for a value of the file's pages (1,010 bytes at 4 KiB, where URLs reach 2,048) is
 * stored without its text: the crawl database's record of the hash holds it (every queued URL has one,
 * committed with the same group commit), and the frontier reads it from there (frontier.ts `urlOf`).
 *
 * `bucket` is the priority made a byte (the depth, or a log scale of the OPIC score), so a refill
 * reads an origin's URLs in priority order up to the bucket's resolution; `seq` is the origin's own
 * admission counter (first come, first served within a bucket). Origin ids are handed out from
 * 0x010000 (16.7 million origins).
 *
 * Writes are staged and reach the file in one atomic commit (`commit`), in the group commit after the
 * page archive and before the crawl database (crawl/crawl.ts `commit`). Crash model: a queued URL is written when it is
 * queued and deleted only after the crawl database committed what settled it (`settle` keeps the
 * deletion back until `crawlDbCommitted`), so a kill at any instant leaves every URL the crawl
 * database calls due either queued here or waiting here; what is here and settled already (the kill
 * fell between the two commits) is checked against the crawl database when it is read back
 * (Frontier's `validate`).
 *
 * Memory: the stage (one commit window of writes) and the deletions held back for one crawl database
 * commit, plus the tree's page cache.
 */
import { BTree } from '../btree/index.js';
import type { UrlHash } from '../../shared/url-hash.js';
import type { FileOps } from '../storage/file-ops.js';
import { MinHeap } from './heap.js';
import { recoverAfterFailedWrite } from '../storage/staged-tree.js';

/** An 8-byte key as a latin1 string of 8 characters (cheap to hash in a Set, one byte per char). */
export type StoreKey = string & { readonly __brand: 'FrontierStoreKey' };

export const FIRST_ORIGIN_ID = 0x010000;
export const MAX_ORIGIN_ID = 0xffffff;
/** Waiting keys start at second 3: seconds 1 and 2 are the directory's and the trusted origins' key spaces. */
const WAITING_SECONDS_MIN = 3;

export interface StoredUrl {
  readonly hash: UrlHash;
  readonly priority: number;
  readonly depth: number;
  readonly charged: boolean;
  readonly redirectHops: number;
  readonly url: string;
}

export interface StoredOrigin {
  readonly id: number;
  readonly origin: string;
  /** The origin's next admission counter. */
  readonly seq: number;
  /** Queued URLs of the origin in the file at the last commit. */
  readonly stored: number;
}

export interface FrontierMeta {
  /** The crawl the queues belong to: the one-shot pass number, or null for a continuous crawl. */
  readonly pass: number | null;
  readonly once: boolean;
  readonly nextOriginId: number;
  readonly waitSeq: number;
  readonly waiting: number;
}

const META_KEY = keyOf([0, 0, 0, 0, 0, 0, 0, 0]);
const TRUSTED_VALUE = Uint8Array.of(1);

function keyOf(bytes: ArrayLike<number>): StoreKey {
  let key = '';
  for (let i = 0; i < 8; i++) key += String.fromCharCode(bytes[i]!);
  return key as StoreKey;
}

function keyBytes(key: StoreKey): Uint8Array {
  return Buffer.from(key, 'latin1');
}

export function urlKey(originId: number, bucket: number, seq: number): StoreKey {
  return String.fromCharCode(
    (originId >>> 16) & 0xff,
    (originId >>> 8) & 0xff,
    originId & 0xff,
    bucket & 0xff,
    (seq >>> 24) & 0xff,
    (seq >>> 16) & 0xff,
    (seq >>> 8) & 0xff,
    seq & 0xff,
  ) as StoreKey;
}

export function originIdOfKey(key: StoreKey): number {
  return (key.charCodeAt(0) << 16) | (key.charCodeAt(1) << 8) | key.charCodeAt(2);
}

export function seqOfKey(key: StoreKey): number {
  return ((key.charCodeAt(4) << 24) >>> 0) + (key.charCodeAt(5) << 16) + (key.charCodeAt(6) << 8) + key.charCodeAt(7);
}

function directoryKey(id: number): StoreKey {
  return keyOf([0, 0, 0, 0, 1, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff]);
}

function trustedKey(id: number): StoreKey {
  return keyOf([0, 0, 0, 0, 2, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff]);
}

function waitingKey(at: number, n: number): StoreKey {
  const seconds = Math.max(WAITING_SECONDS_MIN, Math.min(0xffffffff, Math.floor(at / 1000)));
  return keyOf([0, (seconds >>> 24) & 0xff, (seconds >>> 16) & 0xff, (seconds >>> 8) & 0xff, seconds & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
}

/** The priority as a byte: the depth for breadth-first order; for OPIC (priority = -score) a log scale of the score, highest first. */
export function priorityBucket(priority: number): number {
  if (priority >= 0) return Math.min(255, Math.floor(priority));
  // -score: score 1 (a seed) is bucket 128; every halving of the score one bucket later, doubling earlier.
  const bucket = 128 - Math.round(Math.log2(-priority) * 4);
  return Math.max(0, Math.min(255, Number.isFinite(bucket) ? bucket : 255));
}

/** `maxBytes`: the longest value the file takes; a longer record is written without its URL (see the header). */
export function encodeUrl(entry: StoredUrl, maxBytes = Number.POSITIVE_INFINITY): Uint8Array {
  const urlBytes = Buffer.byteLength(entry.url, 'utf8');
  if (20 + urlBytes > maxBytes) return encodeUrl({ ...entry, url: '' });
  const bytes = Buffer.allocUnsafe(20 + urlBytes);
  bytes.set(entry.hash, 0);
  bytes.writeDoubleBE(entry.priority, 8);
  bytes.writeUInt16BE(Math.min(0xffff, entry.depth), 16);
  bytes[18] = entry.charged ? 1 : 0;
  bytes[19] = Math.min(255, entry.redirectHops);
  bytes.write(entry.url, 20, 'utf8');
  return bytes;
}

export function decodeUrl(bytes: Uint8Array): StoredUrl {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < 20) throw new Error(`frontier store: a queued URL record of ${buffer.length} bytes (at least 20)`);
  return {
    hash: Uint8Array.prototype.slice.call(buffer, 0, 8) as UrlHash,
    priority: buffer.readDoubleBE(8),
    depth: buffer.readUInt16BE(16),
    charged: buffer[18] === 1,
    redirectHops: buffer[19]!,
    url: buffer.toString('utf8', 20),
  };
}

function encodeDirectory(origin: StoredOrigin): Uint8Array {
  const text = Buffer.from(origin.origin, 'utf8');
  const bytes = Buffer.allocUnsafe(8 + text.length);
  bytes.writeUInt32BE(origin.seq >>> 0, 0);
  bytes.writeUInt32BE(origin.stored >>> 0, 4);
  text.copy(bytes, 8);
  return bytes;
}

interface WaitingEntry {
  readonly key: StoreKey;
  readonly at: number;
  readonly hash: UrlHash;
}

/**
 * Pages of 4 KiB. A URL is queued at the end of its origin's key range and settled from its head, so
 * with thousands of origins busy at once a commit rewrites about one leaf per URL it queues or
 * settles, whatever the page size: a smaller page is fewer bytes copied, encoded, checksummed and
 * written per URL, and a commit's copies fit the page cache's spare buffers instead of being
 * allocated afresh. Measured with `bench-queue-server inject --urls 1000000 --hosts 5000`: 16 KiB
 * pages 43.2 s of queue server CPU, 4 KiB 33.1 s. (A file keeps the page size it was created with.)
 */
export const FRONTIER_PAGE_SIZE = 4 * 1024;
/** The page cache: 16 MiB, 4,096 pages of 4 KiB (1,024 of a file made before with 16 KiB pages). */
const FRONTIER_CACHE_BYTES = 16 * 1024 * 1024;

export interface FrontierStoreOptions {
  readonly io?: FileOps;
  readonly cachePages?: number;
}

export class FrontierStore {
  readonly #tree: BTree;
  /** key -> value to write, or null to delete; cleared by a commit that succeeds. */
  readonly #staged = new Map<StoreKey, Uint8Array | null>();
  /** Queued URLs staged for writing, by origin id: a refill reads them beside the file's. */
  readonly #stagedUrls = new Map<number, Set<StoreKey>>();
  /** Waiting URLs staged for writing, earliest first (some may be taken again before the commit). */
  readonly #stagedWaiting = new MinHeap<WaitingEntry>((a, b) => a.at < b.at);
  /** Settled URLs whose crawl database change is not committed yet: kept in the file until it is. */
  #settled = new Set<StoreKey>();
  /** Settled at the last frontier commit; deletable once the crawl database commit after it succeeds. */
  #sealed = new Set<StoreKey>();
  /** Deletable at the next commit. */
  #deletable = new Set<StoreKey>();
  /** Directory records to write (origin id -> record). */
  readonly #dirtyOrigins = new Map<number, () => StoredOrigin>();
  #meta: FrontierMeta;
  #metaDirty = false;
  /** Earliest waiting time, cached; undefined when it must be read again. */
  #nextDue: number | null | undefined = undefined;

  /** The longest value the file's pages take (its page size is the one it was created with). */
  readonly #maxValueBytes: number;

  private constructor(tree: BTree) {
    this.#tree = tree;
    this.#maxValueBytes = tree.stats().maxValueBytes;
    const meta = tree.get(keyBytes(META_KEY));
    this.#meta = meta === null ? { pass: null, once: false, nextOriginId: FIRST_ORIGIN_ID, waitSeq: 0, waiting: 0 } : (JSON.parse(Buffer.from(meta).toString('utf8')) as FrontierMeta);
  }

  static open(path: string, options: FrontierStoreOptions = {}): FrontierStore {
    return new FrontierStore(BTree.open(path, { pageSize: FRONTIER_PAGE_SIZE, cacheBytes: options.cachePages === undefined ? FRONTIER_CACHE_BYTES : undefined, cachePages: options.cachePages, io: options.io }));
  }

  /** Whether the file holds the queues of this crawl (same pass, same mode); false for a new file. */
  holds(pass: number | null, once: boolean): boolean {
    return this.#tree.stats().txid > 0 && this.#meta.pass === pass && this.#meta.once === once;
  }

  /** Marks the file as holding the queues of this crawl (written at the next commit). */
  claimFor(pass: number | null, once: boolean): void {
    this.#meta = { ...this.#meta, pass, once };
    this.#metaDirty = true;
  }

  /** Every origin in the directory (on start). */
  origins(): StoredOrigin[] {
    const found: StoredOrigin[] = [];
    const from = keyBytes(directoryKey(0));
    for (const [key, value] of this.#tree.entries({ from })) {
      if (key[0] !== 0 || key[1] !== 0 || key[2] !== 0 || key[3] !== 0 || key[4] !== 1) break;
      const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
      found.push({ id: (key[5]! << 16) | (key[6]! << 8) | key[7]!, seq: buffer.readUInt32BE(0), stored: buffer.readUInt32BE(4), origin: buffer.toString('utf8', 8) });
    }
    return found;
  }

  /** Ids of the origins an operator named (inject), trusted as a seed's host is (on start). */
  trustedOrigins(): Set<number> {
    const found = new Set<number>();
    for (const [key] of this.#tree.entries({ from: keyBytes(trustedKey(0)) })) {
      if (key[0] !== 0 || key[1] !== 0 || key[2] !== 0 || key[3] !== 0 || key[4] !== 2) break;
      found.add((key[5]! << 16) | (key[6]! << 8) | key[7]!);
    }
    return found;
  }

  /** The origin is trusted (`true`: an inject named it) or no more (`false`: a new crawl), from the next commit. */
  setTrusted(id: number, trusted: boolean): void {
    this.#staged.set(trustedKey(id), trusted ? TRUSTED_VALUE : null);
  }

  /** A new origin id; its directory record is written by `originChanged`. */
  newOriginId(): number {
    const id = this.#meta.nextOriginId;
    if (id > MAX_ORIGIN_ID) throw new Error(`frontier store: more than ${MAX_ORIGIN_ID - FIRST_ORIGIN_ID + 1} origins`);
    this.#meta = { ...this.#meta, nextOriginId: id + 1 };
    this.#metaDirty = true;
    return id;
  }

  /** The origin's directory record is to be written at the next commit, as `record` then says. */
  originChanged(id: number, record: () => StoredOrigin): void {
    this.#dirtyOrigins.set(id, record);
  }

  /**
   * Queues a URL (or rewrites it under the same key). `inMemory`: the frontier holds it (and skips it in
   * every refill), so a refill need not find it in the stage either.
   */
  putUrl(key: StoreKey, entry: StoredUrl, options: { inMemory: boolean }): void {
    this.#staged.set(key, encodeUrl(entry, this.#maxValueBytes));
    if (options.inMemory) return;
    const id = originIdOfKey(key);
    let staged = this.#stagedUrls.get(id);
    if (staged === undefined) this.#stagedUrls.set(id, (staged = new Set()));
    staged.add(key);
  }

  /** The URL is settled: deleted from the file once the crawl database has committed what settled it. */
  settle(key: StoreKey): void {
    this.#settled.add(key);
  }

  /** Whether a key is settled and not deleted yet (a refill skips it). */
  isSettled(key: StoreKey): boolean {
    return this.#settled.has(key) || this.#sealed.has(key) || this.#deletable.has(key);
  }

  /**
   * Up to `limit` queued URLs of the origin in key order, staged ones included, skipping settled ones
   * and those `skip` names (in memory or out on lease). One range read of the file.
   */
  readOrigin(id: number, limit: number, skip: (key: StoreKey) => boolean): { key: StoreKey; entry: StoredUrl }[] {
    const found: { key: StoreKey; bytes: Uint8Array }[] = [];
    const take = (key: StoreKey, bytes: Uint8Array | null | undefined) => {
      if (bytes === null || bytes === undefined || skip(key) || this.isSettled(key)) return;
      found.push({ key, bytes });
    };
    let fromFile = 0;
    for (const [raw, value] of this.#tree.entries({ from: keyBytes(urlKey(id, 0, 0)) })) {
      const key = keyOf(raw);
      if (originIdOfKey(key) !== id) break;
      if (this.#staged.has(key)) continue; // read from the stage below (rewritten or deleted)
      const before = found.length;
      take(key, value);
      if (found.length > before && ++fromFile >= limit) break;
    }
    for (const key of this.#stagedUrls.get(id) ?? []) take(key, this.#staged.get(key));
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.slice(0, limit).map(({ key, bytes }) => ({ key, entry: decodeUrl(bytes) }));
  }

  /** Deletes every queued URL (a crawl stopped, or one rebuilt from the crawl database); the directory stays. */
  clearUrls(): void {
    for (const [raw] of this.#tree.entries({ from: keyBytes(urlKey(FIRST_ORIGIN_ID, 0, 0)) })) this.#staged.set(keyOf(raw), null);
    // Every staged queued URL, those in memory included (not in #stagedUrls).
    for (const [key, value] of this.#staged) if (value !== null && key.charCodeAt(0) !== 0) this.#staged.set(key, null);
    this.#stagedUrls.clear();
    this.#settled.clear();
    this.#sealed.clear();
    this.#deletable.clear();
  }

  get waiting(): number {
    return this.#meta.waiting;
  }

  /** A URL waits until `at` (ms since epoch). */
  putWaiting(hash: UrlHash, at: number): void {
    const n = this.#meta.waitSeq;
    const key = waitingKey(at, n);
    this.#meta = { ...this.#meta, waitSeq: (n + 1) & 0xffffff, waiting: this.#meta.waiting + 1 };
    this.#metaDirty = true;
    const value = Buffer.allocUnsafe(16);
    value.writeDoubleBE(at, 0);
    value.set(hash, 8);
    this.#staged.set(key, value);
    this.#stagedWaiting.push({ key, at, hash });
    if (this.#nextDue !== undefined && (this.#nextDue === null || at < this.#nextDue)) this.#nextDue = at;
  }

  /** The earliest waiting time, ms since epoch; null when nothing waits. */
  nextDueAt(): number | null {
    if (this.#nextDue === undefined) {
      const fromFile = this.#firstWaitingInFile();
      const staged = this.#firstStagedWaiting();
      this.#nextDue = fromFile === null ? (staged?.at ?? null) : staged === undefined ? fromFile.at : Math.min(fromFile.at, staged.at);
    }
    return this.#nextDue;
  }

  /** Removes and returns the waiting URLs due at `now`, at most `limit` of them (earliest first). */
  takeDue(now: number, limit: number): UrlHash[] {
    const due: UrlHash[] = [];
    if ((this.nextDueAt() ?? Infinity) > now) return due;
    for (let staged = this.#firstStagedWaiting(); staged !== undefined && staged.at <= now && due.length < limit; staged = this.#firstStagedWaiting()) {
      this.#stagedWaiting.pop();
      this.#staged.set(staged.key, null);
      due.push(staged.hash);
    }
    for (const [raw, value] of this.#tree.entries({ from: keyBytes(waitingKey(0, 0)) })) {
      if (due.length >= limit || raw[0] !== 0) break;
      const key = keyOf(raw);
      if (this.#staged.has(key)) continue;
      const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
      const at = buffer.readDoubleBE(0);
      if (at > now) {
        // Keys are ordered by the second: later entries of this second may still be due.
        if (Math.floor(at / 1000) > Math.floor(now / 1000)) break;
        continue;
      }
      this.#staged.set(key, null);
      due.push(Uint8Array.prototype.slice.call(buffer, 8, 16) as UrlHash);
    }
    this.#meta = { ...this.#meta, waiting: Math.max(0, this.#meta.waiting - due.length) };
    this.#metaDirty = true;
    this.#nextDue = undefined;
    return due;
  }

  /** Forgets every waiting URL (a crawl stopped, or a new one that reloads them from the crawl database). */
  clearWaiting(): void {
    for (const [raw] of this.#tree.entries({ from: keyBytes(waitingKey(0, 0)) })) {
      if (raw[0] !== 0) break;
      this.#staged.set(keyOf(raw), null);
    }
    for (let staged = this.#stagedWaiting.pop(); staged !== undefined; staged = this.#stagedWaiting.pop()) this.#staged.set(staged.key, null);
    this.#meta = { ...this.#meta, waiting: 0 };
    this.#metaDirty = true;
    this.#nextDue = null;
  }

  /**
   * Writes the stage, the deletions the crawl database has made safe and the directory records in one
   * atomic B-Tree commit; `deleted(originId, n)` is told how many queued URLs of an origin left the
   * file. On failure the stage is kept and the next call writes it again.
   */
  commit(deleted: (originId: number, count: number) => void): void {
    if (this.#tree.failed) this.#tree.recover();
    for (const key of this.#settled) this.#sealed.add(key);
    this.#settled = new Set();
    const deletions = new Map<number, number>();
    for (const key of this.#deletable) deletions.set(originIdOfKey(key), (deletions.get(originIdOfKey(key)) ?? 0) + 1);
    for (const [id, count] of deletions) deleted(id, count);
    const origins = [...this.#dirtyOrigins.values()].map((record) => record());
    if (this.#staged.size === 0 && this.#deletable.size === 0 && origins.length === 0 && !this.#metaDirty) return;
    try {
      this.#tree.write((batch) => {
        for (const [key, value] of this.#staged) {
          if (value === null) batch.delete(keyBytes(key));
          else batch.put(keyBytes(key), value);
        }
        for (const key of this.#deletable) if (!this.#staged.has(key)) batch.delete(keyBytes(key));
        for (const origin of origins) batch.put(keyBytes(directoryKey(origin.id)), encodeDirectory(origin));
        batch.put(keyBytes(META_KEY), Buffer.from(JSON.stringify(this.#meta), 'utf8'));
      });
    } catch (error) {
      // The counts told to `deleted` are taken back: the deletions are written again next time.
      for (const [id, count] of deletions) deleted(id, -count);
      recoverAfterFailedWrite(this.#tree, error);
      throw error;
    }
    this.#staged.clear();
    this.#stagedUrls.clear();
    this.#stagedWaiting.clear();
    this.#deletable.clear();
    this.#dirtyOrigins.clear();
    this.#metaDirty = false;
  }

  /** The crawl database committed: what was settled up to the last frontier commit may now leave the file. */
  crawlDbCommitted(): void {
    for (const key of this.#sealed) this.#deletable.add(key);
    this.#sealed = new Set();
  }

  /** Queued URL keys in the file (tests, checks): committed ones only. */
  *committedUrlKeys(): IterableIterator<StoreKey> {
    for (const [raw] of this.#tree.entries({ from: keyBytes(urlKey(FIRST_ORIGIN_ID, 0, 0)) })) yield keyOf(raw);
  }

  check(): ReturnType<BTree['check']> {
    return this.#tree.check();
  }

  stats(): ReturnType<BTree['stats']> {
    return this.#tree.stats();
  }

  close(): void {
    this.#tree.close();
  }

  #firstStagedWaiting(): WaitingEntry | undefined {
    for (let staged = this.#stagedWaiting.peek(); staged !== undefined; staged = this.#stagedWaiting.peek()) {
      if (this.#staged.get(staged.key) !== null) return staged;
      this.#stagedWaiting.pop();
    }
    return undefined;
  }

  /** The earliest waiting time in the file: keys are ordered by the second, so the whole first second is read. */
  #firstWaitingInFile(): { at: number } | null {
    let earliest: number | null = null;
    let second = -1;
    for (const [raw, value] of this.#tree.entries({ from: keyBytes(waitingKey(0, 0)) })) {
      if (raw[0] !== 0) break;
      const rawSecond = ((raw[1]! << 24) >>> 0) + (raw[2]! << 16) + (raw[3]! << 8) + raw[4]!;
      if (second !== -1 && rawSecond !== second) break;
      if (this.#staged.has(keyOf(raw))) continue;
      second = rawSecond;
      const at = Buffer.from(value.buffer, value.byteOffset, value.byteLength).readDoubleBE(0);
      if (earliest === null || at < earliest) earliest = at;
    }
    return earliest === null ? null : { at: earliest };
  }
}
