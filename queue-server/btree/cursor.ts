/**
 * Read paths: point lookup and the ordered cursor. Both read through a `readNode` function, so the same
 * code serves the committed tree (pages via the cache) and a write transaction's private view.
 *
 * The cursor is live: it holds a root-to-leaf path (branch page ids and a copy of the leaf) from the commit
 * it last saw. If a commit happens between two `next()` calls, those pages may now be free and about to be
 * reused, so the cursor drops its path and re-seeks to the first key after the last one it returned in the
 * new tree. Entries written behind the cursor are not seen; entries ahead of it are.
 */
import type { PageId, UrlKey } from './keys.js';
import type { BTNode } from './node.js';
import { leafValuesAt } from './page-codec.js';

export type ReadNode = (id: PageId) => BTNode;

/** The tree a read runs against; `txid` changes whenever `root` may have. */
export interface ReadView {
  readonly txid: number;
  readonly root: PageId | null;
}

export interface CursorSource {
  view(): ReadView;
  readNode: ReadNode;
}

/** The stored value for `key`, copied into its own buffer, or null. */
export function lookup(root: PageId | null, key: Uint8Array, readNode: ReadNode): Uint8Array | null {
  const found = findLeaf(root, key, readNode);
  return found === null ? null : found.node.copyValueAt(found.index);
}

/** The stored value for `key` handed to `use` as a view into its page (valid only during the call), or null. */
export function lookupWith<T>(root: PageId | null, key: Uint8Array, readNode: ReadNode, use: (value: Uint8Array) => T): T | null {
  const found = findLeaf(root, key, readNode);
  return found === null ? null : use(found.node.valueAt(found.index));
}

/**
 * Which of `keys` are stored, for keys in ascending unsigned byte order (a DRUM-style batch: IRLbot,
 * Lee et al., WWW 2008): one ordered pass, so each leaf is read at most once for a run of keys that
 * falls in it, instead of one root-to-leaf descent and a random leaf read per key. `found[i]` is set
 * for each key present. A key past the last key of the leaf in hand descends again from the root
 * (branches are in the page cache; the leaves are what cost).
 */
export function lookupSorted(root: PageId | null, keys: readonly Uint8Array[], readNode: ReadNode): boolean[] {
  const found = new Array<boolean>(keys.length).fill(false);
  lookupSortedWith(root, keys, readNode, (i, value) => (found[i] = value !== null));
  return found;
}

/**
 * `lookupSorted` handing each key's value to `use` as a view into its page (null when absent), in the
 * order of `keys`. `use` must not read the tree: the leaf in hand is held across keys, and a read could
 * evict it.
 */
export function lookupSortedWith(root: PageId | null, keys: readonly Uint8Array[], readNode: ReadNode, use: (index: number, value: Uint8Array | null) => void): void {
  let leaf: BTNode | null = null;
  for (let i = 0; i < keys.length; i++) {
    if (root === null) {
      use(i, null);
      continue;
    }
    const key = keys[i]!;
    if (leaf === null || leaf.count === 0 || leaf.compareAt(leaf.count - 1, key) < 0) {
      let node = readNode(root);
      while (node.kind === 'branch') node = readNode(node.childAt(node.childIndex(key)));
      leaf = node;
    }
    const index = leaf.lowerBound(key);
    use(i, index < leaf.count && leaf.compareAt(index, key) === 0 ? leaf.valueAt(index) : null);
  }
}

/**
 * Every entry of the tree at `root` in key order, handed to `visit` as views into its page (valid only
 * during the call: copy what is kept); returns how many. A full pass without the cursor's copies of
 * every key and value (the crawl database's load on start). Each page is read again by its id at every
 * step, as the cursor does, since reads the visitor makes may evict it and reuse its buffer; the tree
 * must not be written meanwhile (BTree.forEachEntry refuses that).
 */
export function walkEntries(root: PageId | null, readNode: ReadNode, visit: (key: Uint8Array, value: Uint8Array) => void): number {
  if (root === null) return 0;
  let visited = 0;
  const walk = (id: PageId): void => {
    const node = readNode(id);
    if (node.kind === 'branch') {
      const children = node.childCount;
      for (let i = 0; i < children; i++) walk(readNode(id).childAt(i));
      return;
    }
    const count = node.count;
    let at = leafValuesAt(count);
    for (let i = 0; i < count; i++) {
      const leaf = readNode(id);
      const end = at + leaf.valueLength(i);
      visit(leaf.keyAt(i), leaf.viewRange(at, end));
      at = end;
      visited++;
    }
  };
  walk(root);
  return visited;
}

function findLeaf(root: PageId | null, key: Uint8Array, readNode: ReadNode): { node: BTNode; index: number } | null {
  if (root === null) return null;
  let node = readNode(root);
  while (node.kind === 'branch') node = readNode(node.childAt(node.childIndex(key)));
  const index = node.lowerBound(key);
  return index < node.count && node.compareAt(index, key) === 0 ? { node, index } : null;
}

/** A branch on the cursor's path: its page id (re-read when needed; the cache may evict it) and the child descended into. */
interface BranchFrame {
  readonly id: PageId;
  index: number;
}

/**
 * The leaf the cursor is in, read in place from the page cache by its id at every step: a cached page may
 * be evicted and its buffer reused while the cursor waits, so no node is held between steps; read again,
 * the page holds the same bytes, since a page of a committed tree is never written in place and the
 * cursor seeks anew when a commit changed the tree (`Cursor.next`). No copy of the page is made: a range
 * read of a few entries (a frontier refill, a duplicate band) used to copy a whole 16 KiB leaf.
 */
class LeafFrame {
  readonly #readNode: (id: PageId) => BTNode;
  readonly #id: PageId;
  readonly #count: number;
  /** Next entry to return, and where its value starts in the page. */
  #index: number;
  #valueAt: number;

  constructor(readNode: (id: PageId) => BTNode, id: PageId, node: BTNode, index: number) {
    this.#readNode = readNode;
    this.#id = id;
    this.#count = node.count;
    this.#index = index;
    this.#valueAt = leafValuesAt(this.#count);
    for (let j = 0; j < index; j++) this.#valueAt += node.valueLength(j);
  }

  get done(): boolean {
    return this.#index >= this.#count;
  }

  /** A copy of the key of the entry `take` returned last (not the one handed out: the caller may write into that one). */
  lastKey(): Uint8Array {
    return this.#readNode(this.#id).keyAt(this.#index - 1).slice();
  }

  /** Returns copies of the next entry's key and value (each with its own buffer), and moves past it. */
  take(): [Uint8Array, Uint8Array] {
    const node = this.#readNode(this.#id);
    const i = this.#index++;
    const at = this.#valueAt;
    this.#valueAt += node.valueLength(i);
    return [node.keyAt(i).slice(), node.copyRange(at, this.#valueAt)];
  }
}

/** Ordered iteration over [key, value] copies, starting at `from` (inclusive) or the smallest key. */
export class Cursor implements IterableIterator<[Uint8Array, Uint8Array]> {
  readonly #source: CursorSource;
  readonly #from: UrlKey | null;
  /** Last key returned; the cursor resumes strictly after it when it has to re-seek. */
  #after: Uint8Array | null = null;
  #txid = -1;
  #branches: BranchFrame[] = [];
  #leaf: LeafFrame | null = null;
  #done = false;

  constructor(source: CursorSource, from: UrlKey | null) {
    this.#source = source;
    this.#from = from;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<[Uint8Array, Uint8Array]> {
    if (this.#done) return { done: true, value: undefined };
    const view = this.#source.view();
    if (view.txid !== this.#txid) this.#seek(view);
    const leaf = this.#settle();
    if (leaf === null) {
      this.#done = true;
      this.#branches = [];
      this.#leaf = null;
      return { done: true, value: undefined };
    }
    const entry = leaf.take();
    // Not the key handed out: the caller may write into that one.
    this.#after = leaf.lastKey();
    return { done: false, value: entry };
  }

  #seek(view: ReadView): void {
    this.#txid = view.txid;
    this.#branches = [];
    this.#leaf = null;
    if (view.root === null) return;
    const key = this.#after ?? this.#from;
    let id = view.root;
    let node = this.#source.readNode(id);
    while (node.kind === 'branch') {
      const index = key === null ? 0 : node.childIndex(key);
      this.#branches.push({ id, index });
      id = node.childAt(index);
      node = this.#source.readNode(id);
    }
    let index = key === null ? 0 : node.lowerBound(key);
    if (this.#after !== null && index < node.count && node.compareAt(index, this.#after) === 0) index++;
    this.#leaf = new LeafFrame((page) => this.#source.readNode(page), id, node, index);
  }

  /** Moves past exhausted leaves to the next entry; returns its leaf, or null at the end. */
  #settle(): LeafFrame | null {
    for (;;) {
      if (this.#leaf !== null && !this.#leaf.done) return this.#leaf;
      this.#leaf = null;
      const top = this.#branches[this.#branches.length - 1];
      if (top === undefined) return null;
      const branch = this.#source.readNode(top.id);
      top.index++;
      if (top.index >= branch.childCount) {
        this.#branches.pop();
        continue;
      }
      this.#descendLeftmost(branch.childAt(top.index));
    }
  }

  #descendLeftmost(start: PageId): void {
    let id = start;
    let node = this.#source.readNode(id);
    while (node.kind === 'branch') {
      this.#branches.push({ id, index: 0 });
      id = node.childAt(0);
      node = this.#source.readNode(id);
    }
    this.#leaf = new LeafFrame((page) => this.#source.readNode(page), id, node, 0);
  }
}
