/**
 * Consistency checker: reads every page of the durable tree from disk (bypassing the cache, so it checks
 * the bytes a reopen would see) and reports every broken invariant it finds instead of stopping at the
 * first. Memory: one byte per page of the file, plus one root-to-leaf path.
 *
 * Invariants checked, with their fault codes:
 * - PAGE_CORRUPT       every reachable page passes its checksum and structural decode
 * - PAGE_KIND          tree pointers lead to leaf/branch pages, the free-list chain to free-list pages
 * - PAGE_RANGE         every page reference is within [2, pageCount)
 * - PAGE_DOUBLE_USE    no page is referenced twice (tree, free-list chain and free ids together)
 * - PAGE_LEAKED        every page below the high-water mark is meta, reachable, or free
 * - KEY_ORDER          keys ascend strictly within a node and respect the parent's separators
 * - DEPTH              every leaf is at depth `height` (the tree is balanced)
 * - UNDERFILL          every non-root node is at least a quarter full; branches have >= 2 children
 * - VALUE_TOO_LARGE    no stored value exceeds maxValueBytes
 * - KEY_COUNT, FREE_COUNT, HEIGHT   the meta's counters match what the walk found
 *
 * Warnings, which leave the tree usable and `ok` true:
 * - META_COPY_DAMAGED  one of the two meta pages fails its checksum or decode. The tree is read from the
 *                      other; the damaged copy is the one the next commit writes (pager.ts commit step 3),
 *                      so any write repairs it. Until then a torn write of that commit would find no meta.
 */
import { BTreeError } from './errors.js';
import { compareKeys, keyToHex, type PageId, type UrlKey } from './keys.js';
import {
  META_PAGES,
  PAGE_HEADER_BYTES,
  branchBytes,
  leafBytes,
  maxValueBytes,
  minFillBytes,
  type BranchRecord,
  type LeafRecord,
  type PageRecord,
} from './page-codec.js';
import type { Pager } from './pager.js';

export interface CheckFault {
  readonly code: string;
  readonly page?: number;
  readonly message: string;
}

export interface CheckReport {
  /** No fault (warnings may remain). */
  readonly ok: boolean;
  readonly faults: CheckFault[];
  readonly warnings: CheckFault[];
}

/** Past this many faults the file is plainly broken; stop collecting so the report stays readable. */
const MAX_FAULTS = 1000;

const UNSEEN = 0;
const META = 1;
const TREE = 2;
const CHAIN = 3;
const FREE = 4;
const USE_NAMES = ['unseen', 'meta', 'tree', 'free-list chain', 'free'] as const;

export function checkTree(pager: Pager): CheckReport {
  return new Checker(pager).run();
}

class Checker {
  readonly #pager: Pager;
  readonly #faults: CheckFault[] = [];
  readonly #use: Uint8Array;
  #keys = 0;

  constructor(pager: Pager) {
    this.#pager = pager;
    this.#use = new Uint8Array(pager.meta.pageCount);
  }

  run(): CheckReport {
    const meta = this.#pager.meta;
    for (let i = 0; i < META_PAGES && i < this.#use.length; i++) this.#use[i] = META;
    // The file may end before pageCount * pageSize: a page allocated at the end and released again in the
    // same transaction is free but was never written. A reachable page past the end fails to read
    // (PAGE_CORRUPT), so a truncated file is still caught.
    if (meta.root === null) {
      if (meta.height !== 0) this.#fault('HEIGHT', undefined, `empty tree but meta height ${meta.height}`);
    } else {
      this.#walk(meta.root, { depth: 1, lo: null, hi: null, isRoot: true });
    }
    if (this.#keys !== meta.keyCount) {
      this.#fault('KEY_COUNT', undefined, `tree holds ${this.#keys} keys, meta says ${meta.keyCount}`);
    }
    this.#checkFreelist();
    for (let id = META_PAGES; id < this.#use.length && this.#faults.length < MAX_FAULTS; id++) {
      if (this.#use[id] === UNSEEN) this.#fault('PAGE_LEAKED', id, 'page is neither reachable nor free');
    }
    return { ok: this.#faults.length === 0, faults: this.#faults, warnings: this.#metaWarnings() };
  }

  #metaWarnings(): CheckFault[] {
    const copies = this.#pager.metaCopies();
    const current = this.#pager.meta;
    return copies.flatMap((copy, slot) =>
      copy !== null
        ? []
        : [
            {
              code: 'META_COPY_DAMAGED',
              page: slot,
              message:
                `meta page ${slot} is damaged (checksum or layout); the tree is read from meta page ${1 - slot} (txid ${current.txid}), which is consistent ` +
                `(if the damaged copy held a later commit, that commit is lost: a crawl fetches its URLs again). ` +
                `Repair: the next commit rewrites page ${slot} from the current tree (open it for writing once: petrel crawl, start or queue-server on its data directory); until then there is no spare copy`,
            },
          ],
    );
  }

  #walk(id: PageId, at: { depth: number; lo: UrlKey | null; hi: UrlKey | null; isRoot: boolean }): void {
    if (this.#faults.length >= MAX_FAULTS || !this.#claim(id, TREE)) return;
    const rec = this.#read(id);
    if (rec === null) return;
    if (rec.kind !== 'leaf' && rec.kind !== 'branch') {
      this.#fault('PAGE_KIND', id, `tree points at a ${rec.kind} page`);
      return;
    }
    const node = rec;
    const pageSize = this.#pager.pageSize;
    const height = this.#pager.meta.height;
    this.#checkKeys(id, node, at.lo, at.hi);
    const used = encodedBytes(node);
    if (!at.isRoot && used - PAGE_HEADER_BYTES < minFillBytes(pageSize)) {
      this.#fault('UNDERFILL', id, `${node.kind} uses ${used} of ${pageSize} bytes`);
    }
    if (node.kind === 'leaf') {
      if (at.depth !== height) this.#fault('DEPTH', id, `leaf at depth ${at.depth}, meta height ${height}`);
      if (node.keys.length === 0) this.#fault('UNDERFILL', id, 'empty leaf');
      const max = maxValueBytes(pageSize);
      node.values.forEach((v, i) => {
        if (v.length > max) this.#fault('VALUE_TOO_LARGE', id, `value ${i} has ${v.length} bytes, max ${max}`);
      });
      this.#keys += node.keys.length;
      return;
    }
    if (at.depth >= height) {
      this.#fault('DEPTH', id, `branch at depth ${at.depth}, meta height ${height}`);
      return;
    }
    if (node.children.length < 2) this.#fault('UNDERFILL', id, 'branch with a single child');
    node.children.forEach((child, i) => {
      this.#walk(child, {
        depth: at.depth + 1,
        lo: i === 0 ? at.lo : node.keys[i - 1]!,
        hi: i === node.keys.length ? at.hi : node.keys[i]!,
        isRoot: false,
      });
    });
  }

  /** Keys ascend strictly and lie in [lo, hi). */
  #checkKeys(id: PageId, node: LeafRecord | BranchRecord, lo: UrlKey | null, hi: UrlKey | null): void {
    node.keys.forEach((key, i) => {
      const prev = i === 0 ? null : node.keys[i - 1]!;
      if (prev !== null && compareKeys(prev, key) >= 0) {
        this.#fault('KEY_ORDER', id, `key ${keyToHex(key)} at ${i} does not follow ${keyToHex(prev)}`);
      }
      if ((lo !== null && compareKeys(key, lo) < 0) || (hi !== null && compareKeys(key, hi) >= 0)) {
        const range = `[${lo === null ? '-inf' : keyToHex(lo)}, ${hi === null ? '+inf' : keyToHex(hi)})`;
        this.#fault('KEY_ORDER', id, `key ${keyToHex(key)} outside the parent's range ${range}`);
      }
    });
  }

  #checkFreelist(): void {
    const meta = this.#pager.meta;
    let free = 0;
    for (let id = meta.freelistHead; id !== null && this.#faults.length < MAX_FAULTS; ) {
      if (!this.#claim(id, CHAIN)) return;
      const rec = this.#read(id);
      if (rec === null) return;
      if (rec.kind !== 'freelist') {
        this.#fault('PAGE_KIND', id, `free-list chain points at a ${rec.kind} page`);
        return;
      }
      for (const freeId of rec.ids) {
        if (this.#claim(freeId, FREE)) free++;
      }
      id = rec.next;
    }
    if (free !== meta.freeCount) {
      this.#fault('FREE_COUNT', undefined, `free-list holds ${free} usable ids, meta says ${meta.freeCount}`);
    }
  }

  /** Marks a page as used for `use`; false (with a fault) if it is out of range or already used. */
  #claim(id: PageId, use: number): boolean {
    if (!Number.isInteger(id) || id < META_PAGES || id >= this.#use.length) {
      this.#fault('PAGE_RANGE', id, `reference to page ${id} outside [${META_PAGES}, ${this.#use.length})`);
      return false;
    }
    const prior = this.#use[id]!;
    if (prior !== UNSEEN) {
      this.#fault('PAGE_DOUBLE_USE', id, `page is used as ${USE_NAMES[use]} and as ${USE_NAMES[prior]}`);
      return false;
    }
    this.#use[id] = use;
    return true;
  }

  #read(id: PageId): PageRecord | null {
    try {
      return this.#pager.readPage(id);
    } catch (err) {
      if (err instanceof BTreeError && err.code === 'BTREE_CORRUPT') {
        this.#fault('PAGE_CORRUPT', id, err.message);
        return null;
      }
      throw err;
    }
  }

  #fault(code: string, page: number | undefined, message: string): void {
    if (this.#faults.length >= MAX_FAULTS) return;
    this.#faults.push(page === undefined ? { code, message } : { code, page, message });
    if (this.#faults.length === MAX_FAULTS) {
      this.#faults.push({ code: 'TOO_MANY_FAULTS', message: `stopped after ${MAX_FAULTS} faults` });
    }
  }
}

/** The bytes a node page uses, header included. */
function encodedBytes(node: LeafRecord | BranchRecord): number {
  if (node.kind === 'branch') return branchBytes(node.keys.length);
  let values = 0;
  for (const v of node.values) values += v.length;
  return leafBytes(node.keys.length, values);
}
