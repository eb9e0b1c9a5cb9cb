/**
 * A binary min-heap ordered by a caller-supplied comparison. Used for the per-origin URL queues and
 * for the origin readiness queues of the frontier. Memory: one array slot per element; a small heap's
 * array is exactly as long as the heap.
 *
 * Why exact: V8 grows a full array by half plus 16 slots, so a heap of one or two URLs held 17 slots
 * (152 bytes on a 64-bit Node); with 50,000 origins holding two heads each, 7.8 MB of a queue
 * server's heap (a heap snapshot after a 1,000,000-URL inject). Up to SMALL_HEAP elements a push
 * copies the array into one a slot longer instead; a pop shrinks it in place (V8 trims an array that
 * drops below half its capacity).
 */
const SMALL_HEAP = 16;

export class MinHeap<T> {
  #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    let items = this.#items;
    if (items.length < SMALL_HEAP) {
      const grown = new Array<T>(items.length + 1);
      for (let i = 0; i < items.length; i++) grown[i] = items[i]!;
      grown[items.length] = item;
      items = this.#items = grown;
    } else {
      items.push(item);
    }
    let child = items.length - 1;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.#less(items[child]!, items[parent]!)) break;
      [items[child], items[parent]] = [items[parent]!, items[child]!];
      child = parent;
    }
  }

  pop(): T | undefined {
    const items = this.#items;
    if (items.length === 0) return undefined;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let parent = 0;
      for (;;) {
        const left = parent * 2 + 1;
        const right = left + 1;
        let smallest = parent;
        if (left < items.length && this.#less(items[left]!, items[smallest]!)) smallest = left;
        if (right < items.length && this.#less(items[right]!, items[smallest]!)) smallest = right;
        if (smallest === parent) break;
        [items[smallest], items[parent]] = [items[parent]!, items[smallest]!];
        parent = smallest;
      }
    }
    return top;
  }

  /** Removes every element (the heap is reused). */
  clear(): void {
    this.#items.length = 0;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    yield* this.#items;
  }
}
