/**
 * Read paths: point lookup and the ordered cursor. Both read through a `readNode` function, so the same
 * code serves the committed tree (pages via the cache) and a write transaction's private view.
 *
 * The cursor is live: it holds a root-to-leaf path of nodes from the commit it last saw. If a commit
 * happens between two `next()` calls, those nodes may describe pages that are now free and about to be
 * reused, so the cursor drops its path and re-seeks to the first key after the last one it returned in the
 * new tree. Entries written behind the cursor are not seen; entries ahead of it are.
 */
import { compareKeys, type PageId, type UrlKey } from './keys.js';
import type { BTNode } from './node.js';

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

/** The stored value for `key` (a view into a cached page: copy before handing it out), or null. */
export function lookup(root: PageId | null, key: Uint8Array, readNode: ReadNode): Uint8Array | null {
  if (root === null) return null;
  let node = readNode(root);
  while (node.kind === 'branch') node = readNode(node.children[node.childIndex(key)]!);
  const i = node.lowerBound(key);
  return i < node.count && compareKeys(node.keys[i]!, key) === 0 ? node.values[i]! : null;
}

interface Frame {
  readonly node: BTNode;
  /** Branch: child currently descended into. Leaf: next entry to return. */
  index: number;
}

/** Ordered iteration over [key, value] copies, starting at `from` (inclusive) or the smallest key. */
export class Cursor implements IterableIterator<[Uint8Array, Uint8Array]> {
  readonly #source: CursorSource;
  readonly #from: UrlKey | null;
  /** Last key returned; the cursor resumes strictly after it when it has to re-seek. */
  #after: UrlKey | null = null;
  #txid = -1;
  #stack: Frame[] = [];
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
      this.#stack = [];
      return { done: true, value: undefined };
    }
    const key = leaf.node.keys[leaf.index]!;
    const value = leaf.node.values[leaf.index]!;
    leaf.index++;
    this.#after = key;
    return { done: false, value: [new Uint8Array(key), new Uint8Array(value)] };
  }

  #seek(view: ReadView): void {
    this.#txid = view.txid;
    this.#stack = [];
    if (view.root === null) return;
    const key = this.#after ?? this.#from;
    let node = this.#source.readNode(view.root);
    while (node.kind === 'branch') {
      const index = key === null ? 0 : node.childIndex(key);
      this.#stack.push({ node, index });
      node = this.#source.readNode(node.children[index]!);
    }
    let index = key === null ? 0 : node.lowerBound(key);
    if (this.#after !== null && index < node.count && compareKeys(node.keys[index]!, this.#after) === 0) index++;
    this.#stack.push({ node, index });
  }

  /** Moves past exhausted leaves to the next entry; returns its leaf frame, or null at the end. */
  #settle(): Frame | null {
    for (;;) {
      const top = this.#stack[this.#stack.length - 1];
      if (top === undefined) return null;
      if (top.node.kind === 'leaf') {
        if (top.index < top.node.count) return top;
        this.#stack.pop();
        continue;
      }
      top.index++;
      if (top.index >= top.node.children.length) {
        this.#stack.pop();
        continue;
      }
      this.#descendLeftmost(top.node.children[top.index]!);
    }
  }

  #descendLeftmost(id: PageId): void {
    let node = this.#source.readNode(id);
    while (node.kind === 'branch') {
      this.#stack.push({ node, index: 0 });
      node = this.#source.readNode(node.children[0]!);
    }
    this.#stack.push({ node, index: 0 });
  }
}
