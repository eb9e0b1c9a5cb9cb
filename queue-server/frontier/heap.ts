/**
 * A binary min-heap ordered by a caller-supplied comparison. Used for the per-origin URL queues and
 * for the origin readiness queues of the frontier. Memory: one array slot per element.
 */
export class MinHeap<T> {
  readonly #items: T[] = [];
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
    const items = this.#items;
    items.push(item);
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
