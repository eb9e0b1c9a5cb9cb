/**
 * Pager: the file, the page cache, page allocation and the commit. The only module that does I/O.
 *
 * File = pages of `pageSize` bytes. Pages 0 and 1 are two copies of the meta; a commit overwrites the
 * older copy (slot txid % 2), so the newer one is intact while it is written. Every other page is written
 * only while no durable meta references it (copy-on-write; see freelist.ts), so a commit that dies at any
 * instant leaves the previous durable state whole. LAYOUT.md explains the crash model in full.
 *
 * I/O is synchronous on purpose: the caller is a single-threaded daemon and a commit must not interleave
 * with anything else. It goes through a FileOps (storage/file-ops.ts, node:fs by default), the seam that
 * lets tests watch the order of writes and fsyncs and fail any one of them.
 */
import * as nodePath from 'node:path';
import { fsyncDir, nodeFileOps, writeFully, type FileOps } from '../storage/file-ops.js';
import { STAGING_BYTES, writeJoined } from '../storage/staging-buffer.js';
import { BTreeError, corruptPage, inFile } from './errors.js';
import { Freelist } from './freelist.js';
import { asPageId, type PageId } from './keys.js';
import { BTNode } from './node.js';
import { PageCache } from './page-cache.js';
import {
  FORMAT_VERSION,
  UPGRADABLE_VERSION,
  MAX_PAGE_SIZE,
  META_PAGES,
  META_PROBE_BYTES,
  MIN_PAGE_SIZE,
  decodeMeta,
  decodePage,
  encodeFreelist,
  encodeMeta,
  freelistCapacity,
  probeMetaPageSize,
  probeMetaVersion,
  verifyNodePage,
  type MetaFields,
  type PageRecord,
} from './page-codec.js';

export interface PagerOptions {
  /** Used only when the file is created; an existing file keeps the page size in its meta. */
  readonly pageSize: number;
  readonly cachePages: number;
  /** Instead of `cachePages`: the cache's bound in bytes, at the file's own page size (at least 16 pages). */
  readonly cacheBytes?: number;
  readonly create: boolean;
  readonly readOnly: boolean;
  /** The file operations (default node:fs); tests interpose on them (storage/file-ops.ts). */
  readonly io?: FileOps;
}

/** What a write transaction hands to `commit`. */
export interface CommitRequest {
  /** Every node the transaction wrote, each under a page id it got from `allocate`. */
  readonly dirty: Iterable<BTNode>;
  readonly root: PageId | null;
  readonly height: number;
  readonly keyCount: number;
  readonly stamp: number;
}

export class Pager {
  readonly path: string;
  readonly pageSize: number;
  readonly readOnly: boolean;
  readonly #io: FileOps;
  #fd: number | null;
  #meta: MetaFields;
  /** Pages holding the free-list chain of the durable meta, head first. */
  #chain: PageId[];
  #freelist: Freelist;
  readonly #cache: PageCache;
  /** Set when a commit's I/O failed: the on-disk meta may be ahead of memory, so refuse further work. */
  #failure: BTreeError | null = null;

  private constructor(path: string, io: FileOps, fd: number, meta: MetaFields, chain: PageId[], freeIds: PageId[], opts: PagerOptions) {
    this.path = path;
    this.#io = io;
    this.pageSize = meta.pageSize;
    this.readOnly = opts.readOnly;
    this.#fd = fd;
    this.#meta = meta;
    this.#chain = chain;
    this.#freelist = new Freelist(freeIds, meta.pageCount);
    this.#cache = new PageCache(opts.cacheBytes === undefined ? opts.cachePages : Math.max(16, Math.floor(opts.cacheBytes / meta.pageSize)), meta.pageSize);
  }

  static open(path: string, opts: PagerOptions): Pager {
    const io = opts.io ?? nodeFileOps;
    if (!io.exists(path)) {
      if (!opts.create || opts.readOnly) throw new BTreeError('BTREE_NOT_FOUND', `no B-tree file at ${path}`);
      createFile(io, path, opts.pageSize);
    }
    const fd = io.open(path, opts.readOnly ? 'r' : 'r+');
    try {
      if (io.size(fd) === 0 && opts.create && !opts.readOnly) {
        // An empty file (e.g. made by `touch`) is adopted as a new tree.
        writeInitialMetas(io, fd, opts.pageSize);
      }
      const meta = readNewestMeta(io, fd, path);
      const { chain, ids } = readFreelist(io, fd, meta);
      return new Pager(path, io, fd, meta, chain, ids, opts);
    } catch (err) {
      io.close(fd);
      throw err;
    }
  }

  /**
   * After a failed commit: reads the durable state back from the file (what a reopen would find:
   * the previous commit, or the failed one if its meta page got written) and makes the handle usable
   * again. Nothing in memory is trusted: the page cache is dropped, meta and free list are re-read.
   * A commit retried after this writes all its pages again (it does not count on the failed attempt's
   * writes, which a failed fsync may have lost), so a successful fsync then covers every page it
   * references. Throws, and stays refused, if the file cannot be read.
   */
  recover(): void {
    if (this.#fd === null) throw new BTreeError('BTREE_CLOSED', `B-tree ${this.path} is closed`);
    const meta = readNewestMeta(this.#io, this.#fd, this.path);
    const { chain, ids } = readFreelist(this.#io, this.#fd, meta);
    this.#meta = meta;
    this.#chain = chain;
    this.#freelist = new Freelist(ids, meta.pageCount);
    this.#cache.clear();
    this.#failure = null;
  }

  /** True after a commit's I/O failed, until `recover`. */
  get failed(): boolean {
    return this.#failure !== null;
  }

  /** The durable meta: what a reopen would see right now. */
  get meta(): MetaFields {
    return this.#meta;
  }

  get freelistChain(): readonly PageId[] {
    return this.#chain;
  }

  get cache(): { readonly size: number; readonly capacity: number; readonly hits: number; readonly misses: number } {
    return this.#cache;
  }

  fileBytes(): number {
    return this.#io.size(this.#usableFd());
  }

  /**
   * A tree node, through the cache. Throws `BTREE_CORRUPT` for a damaged page or a non-node page. The node
   * is valid until the next page read (node.ts, "Ownership and lifetime").
   */
  readNode(id: PageId): BTNode {
    const cached = this.#cache.get(id);
    if (cached !== undefined) return cached;
    try {
      const buf = this.#readNodePage(id);
      const { kind, count, used } = verifyOrGiveBack(this.#cache, buf, id);
      const node = BTNode.fromPage(id, buf, kind, count, used);
      this.#cache.set(id, node);
      return node;
    } catch (error) {
      throw inFile(error, this.path);
    }
  }


  /**
   * Both meta copies as they are on disk now (null: one that fails its checksum or decode). The tree is
   * read from the valid one with the higher txid; the other is the previous commit, which the next
   * commit overwrites (commit step 3).
   */
  metaCopies(): [MetaFields | null, MetaFields | null] {
    const fd = this.#usableFd();
    return [tryReadMeta(this.#io, fd, 0, this.pageSize), tryReadMeta(this.#io, fd, 1, this.pageSize)];
  }

  /**
   * A writable copy of node `id` under page id `copyId`, for a write transaction: copied from the cache
   * when the page is there, else read straight into the copy's buffer without filling the cache with a
   * page the commit will release.
   */
  copyForWrite(id: PageId, copyId: PageId): BTNode {
    const cached = this.#cache.get(id);
    if (cached !== undefined) return cached.cloneAs(copyId, this.#cache);
    this.#cache.countMiss();
    try {
      const buf = this.#readNodePage(id);
      const { kind, count, used } = verifyOrGiveBack(this.#cache, buf, id);
      return BTNode.fromPage(copyId, buf, kind, count, used, this.#cache);
    } catch (error) {
      throw inFile(error, this.path);
    }
  }

  /** Where a write transaction gets buffers for its nodes. */
  get buffers(): PageCache {
    return this.#cache;
  }

  #readNodePage(id: PageId): Uint8Array {
    const fd = this.#usableFd();
    if (!Number.isInteger(id) || id < META_PAGES || id >= this.#meta.pageCount) {
      throw corruptPage(id, `page reference out of range [${META_PAGES}, ${this.#meta.pageCount})`);
    }
    const buf = this.#cache.take();
    try {
      readInto(this.#io, fd, buf, id * this.pageSize, id);
    } catch (err) {
      this.#cache.give(buf);
      throw err;
    }
    return buf;
  }

  /** Any page, verified, bypassing the cache (the checker uses this so it sees the bytes on disk). */
  readPage(id: PageId): PageRecord {
    const fd = this.#usableFd();
    if (!Number.isInteger(id) || id < META_PAGES || id >= this.#meta.pageCount) {
      throw corruptPage(id, `page reference out of range [${META_PAGES}, ${this.#meta.pageCount})`);
    }
    return decodePage(readBytes(this.#io, fd, id * this.pageSize, this.pageSize, id), id);
  }

  // ---- write transaction: begin, allocate/release/reuse, then commit or rollback ----

  begin(): void {
    this.#usableFd();
    if (this.readOnly) throw new BTreeError('BTREE_READ_ONLY', `${this.path} was opened read-only`);
    this.#freelist.begin();
  }

  allocate(): PageId {
    return this.#freelist.allocate();
  }

  release(id: PageId): void {
    this.#freelist.release(id);
  }

  reuse(id: PageId): void {
    this.#freelist.reuse(id);
  }

  rollback(): void {
    this.#freelist.rollback();
  }

  /**
   * Makes the transaction durable, or leaves the durable state untouched if anything fails.
   * Steps 1-4 are the crash model: whatever instant the process dies at, a reopen finds either the old meta
   * (steps 1-3 not finished: the new pages are unreferenced garbage on free pages) or the new one
   * (step 3 reached the disk, and it only did after step 2 made every page it references durable).
   */
  commit(req: CommitRequest): void {
    const fd = this.#usableFd();
    const pageSize = this.pageSize;
    const nodes = [...req.dirty];
    let writes: Array<{ id: PageId; bytes: Uint8Array }>;
    let next: MetaFields;
    let layout: { chain: PageId[]; ids: PageId[] };
    let released: readonly PageId[];
    try {
      // Step 0 (memory only): lay out the new free-list chain and encode every page the commit writes.
      released = this.#freelist.released;
      layout = this.#freelist.layOut(this.#chain, freelistCapacity(pageSize));
      writes = nodes.map((node) => ({ id: node.id, bytes: node.encode(pageSize) }));
      const perPage = freelistCapacity(pageSize);
      layout.chain.forEach((id, i) => {
        const ids = layout.ids.slice(i * perPage, (i + 1) * perPage);
        writes.push({ id, bytes: encodeFreelist(id, ids, layout.chain[i + 1] ?? null, pageSize) });
      });
      next = {
        pageSize,
        txid: this.#meta.txid + 1,
        root: req.root,
        freelistHead: layout.chain[0] ?? null,
        pageCount: this.#freelist.pageCount,
        freeCount: layout.ids.length,
        keyCount: req.keyCount,
        height: req.height,
        stamp: req.stamp,
      };
    } catch (err) {
      this.#freelist.rollback();
      throw err;
    }

    try {
      // Step 1: write every dirty page (tree nodes and the new free-list chain). All of them sit on pages
      // the durable meta does not reference: free pages or pages past its high-water mark.
      writePages(this.#io, fd, writes, pageSize);
      // Step 2: fsync, so every page the new meta will reference is on disk before the meta is.
      this.#io.fsync(fd);
      // Step 3: write the new meta over the older of the two meta copies. A torn write here fails the meta's
      // checksum, and open falls back to the other copy: the previous commit.
      const slot = next.txid % 2 === 0 ? 0 : 1;
      writeFully(this.#io, fd, encodeMeta(slot, next), slot * pageSize);
      // Step 4: fsync. The commit is durable from here on.
      this.#io.fsync(fd);
    } catch (err) {
      this.#freelist.rollback();
      this.#failure = new BTreeError(
        'BTREE_IO',
        `commit of txid ${next.txid} to ${this.path} failed (${describeCause(err)}); recover() or reopen the file to get the last durable commit`,
        { cause: err },
      );
      throw this.#failure;
    }

    // Adopt the new durable state in memory. Pages this commit released hold nothing the new meta
    // references, so their cache entries go (their buffers serve the next transaction); the written
    // nodes become clean cached pages.
    this.#meta = next;
    this.#chain = layout.chain;
    this.#freelist.finish(layout.ids);
    this.#cache.sizeSpareFor(nodes.length);
    for (const id of layout.chain) this.#cache.delete(id);
    for (const id of released) this.#cache.delete(id);
    for (const node of nodes) {
      node.freeze();
      this.#cache.set(node.id, node);
    }
  }

  close(): void {
    if (this.#fd === null) return;
    this.#freelist.rollback();
    this.#cache.clear();
    this.#io.close(this.#fd);
    this.#fd = null;
  }

  /** Throws `BTREE_CLOSED` after close, or the `BTREE_IO` error of a failed commit. */
  assertUsable(): void {
    this.#usableFd();
  }

  #usableFd(): number {
    if (this.#fd === null) throw new BTreeError('BTREE_CLOSED', `B-tree ${this.path} is closed`);
    if (this.#failure !== null) throw this.#failure;
    return this.#fd;
  }
}

// ---- file helpers ----

function describeCause(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const message = String((err as Error)?.message ?? err).slice(0, 200);
  return typeof code === 'string' && !message.startsWith(code) ? `${code}: ${message}` : message;
}

/** Verifies a node page just read; on failure its buffer goes back to the pool before the error is thrown. */
function verifyOrGiveBack(cache: PageCache, buf: Uint8Array, id: PageId): ReturnType<typeof verifyNodePage> {
  try {
    return verifyNodePage(buf, id);
  } catch (err) {
    cache.give(buf);
    throw err;
  }
}

function readBytes(io: FileOps, fd: number, position: number, length: number, page: number): Uint8Array {
  const bytes = new Uint8Array(length);
  readInto(io, fd, bytes, position, page);
  return bytes;
}

/** Fills `bytes` from `position`; a file that ends first is a damaged page. */
function readInto(io: FileOps, fd: number, bytes: Uint8Array, position: number, page: number): void {
  const length = bytes.length;
  let done = 0;
  while (done < length) {
    const n = io.read(fd, bytes, done, length - done, position + done);
    if (n === 0) throw corruptPage(page, `file ends inside the page (${done} of ${length} bytes)`);
    done += n;
  }
}

/**
 * Writes pages in id order, one write call per run of consecutive ids (of at most STAGING_BYTES: a
 * longer run takes several), joined in the shared staging buffer.
 */
function writePages(io: FileOps, fd: number, pages: Array<{ id: PageId; bytes: Uint8Array }>, pageSize: number): void {
  pages.sort((a, b) => a.id - b.id);
  const perWrite = Math.max(1, Math.floor(STAGING_BYTES / pageSize));
  let i = 0;
  while (i < pages.length) {
    let j = i + 1;
    while (j < pages.length && j - i < perWrite && pages[j]!.id === pages[j - 1]!.id + 1) j++;
    const run = pages.slice(i, j).map(({ id, bytes }) => {
      if (bytes.length !== pageSize) throw new Error(`page ${id} encoded to ${bytes.length} bytes, not ${pageSize}`);
      return bytes;
    });
    writeJoined(io, fd, run, pages[i]!.id * pageSize);
    i = j;
  }
}

function emptyMeta(pageSize: number): MetaFields {
  return { pageSize, txid: 0, root: null, freelistHead: null, pageCount: META_PAGES, freeCount: 0, keyCount: 0, height: 0, stamp: 0 };
}

function writeInitialMetas(io: FileOps, fd: number, pageSize: number): void {
  const meta = emptyMeta(pageSize);
  writeFully(io, fd, encodeMeta(0, meta), 0);
  writeFully(io, fd, encodeMeta(1, meta), pageSize);
  io.fsync(fd);
}

/**
 * Creates the file atomically: both metas go into a side file that is fsynced and then hard-linked to
 * `path` (link fails rather than replacing a file someone else created meanwhile). A crash leaves either
 * no file at `path` or a complete one.
 */
function createFile(io: FileOps, path: string, pageSize: number): void {
  const temp = `${path}.creating`;
  try {
    const fd = io.open(temp, 'w', 0o600);
    try {
      writeInitialMetas(io, fd, pageSize);
    } finally {
      io.close(fd);
    }
    try {
      io.link(temp, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  } finally {
    io.unlink(temp);
  }
  fsyncDir(io, nodePath.dirname(nodePath.resolve(path)));
}

function tryReadMeta(io: FileOps, fd: number, slot: 0 | 1, pageSize: number): MetaFields | null {
  try {
    return decodeMeta(readBytes(io, fd, slot * pageSize, pageSize, slot), slot);
  } catch {
    return null;
  }
}

/**
 * Picks the valid meta with the highest txid. Slot 0 announces the page size; if slot 0 is torn, slot 1 is
 * looked for at every legal page size (slot 1 starts at byte offset pageSize).
 */
function readNewestMeta(io: FileOps, fd: number, path: string): MetaFields {
  let head: Uint8Array | null = null;
  try {
    head = readBytes(io, fd, 0, META_PROBE_BYTES, 0);
  } catch {
    head = null;
  }
  const claimed = head === null ? null : probeMetaPageSize(head);
  const meta0 = claimed === null ? null : tryReadMeta(io, fd, 0, claimed);
  const sizes: number[] = [];
  if (meta0 !== null) sizes.push(meta0.pageSize);
  else for (let s = MIN_PAGE_SIZE; s <= MAX_PAGE_SIZE; s *= 2) sizes.push(s);
  let best = meta0;
  for (const s of sizes) {
    const meta1 = tryReadMeta(io, fd, 1, s);
    if (meta1 !== null && (best === null || meta1.txid > best.txid)) best = meta1;
  }
  if (best === null) {
    const version = otherFormatVersion(io, fd, head);
    if (version !== null) {
      throw new BTreeError(
        'BTREE_VERSION',
        `${path} is a Petrel B-Tree of format version ${version}; this Petrel reads version ${FORMAT_VERSION} only ` +
          `(queue-server/btree/LAYOUT.md). ${version === UPGRADABLE_VERSION ? `Upgrade it with \`petrel btree upgrade ${path}\` (or \`petrel btree upgrade --data DIR\` for a whole data directory), with the queue server stopped.` : 'Start with a new data directory, or read the file with the Petrel that wrote it.'}`,
      );
    }
    throw new BTreeError('BTREE_CORRUPT', `${path}: neither meta page (0 or 1) is valid`, { page: 0 });
  }
  return best;
}

/**
 * When no meta page is valid: the format version a meta page announces if it has the magic of a Petrel
 * B-Tree but another version (slot 0, or slot 1 at any legal page size), else null.
 */
function otherFormatVersion(io: FileOps, fd: number, head: Uint8Array | null): number | null {
  const heads: Array<Uint8Array | null> = [head];
  for (let s = MIN_PAGE_SIZE; s <= MAX_PAGE_SIZE; s *= 2) {
    try {
      heads.push(readBytes(io, fd, s, META_PROBE_BYTES, 1));
    } catch {
      heads.push(null);
    }
  }
  for (const h of heads) {
    const version = h === null ? null : probeMetaVersion(h);
    if (version !== null && version !== FORMAT_VERSION) return version;
  }
  return null;
}

function readFreelist(io: FileOps, fd: number, meta: MetaFields): { chain: PageId[]; ids: PageId[] } {
  const chain: PageId[] = [];
  const ids: PageId[] = [];
  const seen = new Set<number>();
  for (let id = meta.freelistHead; id !== null; ) {
    if (id < META_PAGES || id >= meta.pageCount || seen.has(id)) {
      throw corruptPage(id, 'free-list chain points out of range or loops');
    }
    seen.add(id);
    const rec = decodePage(readBytes(io, fd, id * meta.pageSize, meta.pageSize, id), id);
    if (rec.kind !== 'freelist') throw corruptPage(id, `expected a free-list page, found a ${rec.kind} page`);
    for (const free of rec.ids) {
      if (free < META_PAGES || free >= meta.pageCount || seen.has(free)) {
        throw corruptPage(id, `free-list entry ${free} is out of range or listed twice`);
      }
      seen.add(free);
      ids.push(free);
    }
    chain.push(id);
    id = rec.next;
  }
  if (ids.length !== meta.freeCount) {
    throw corruptPage(chain[0] ?? 0, `free-list holds ${ids.length} ids, meta says ${meta.freeCount}`);
  }
  return { chain, ids: ids.map(asPageId) };
}
