/**
 * Deterministic pseudo-randomness. Everything the test web generates (link graphs, text) draws from a
 * generator seeded by a string such as `graph:<host>:<page>`, so the same options give the same bytes in
 * every run and process. Never seeded by the port, so the link graph is the same whatever port we got.
 */

/** FNV-1a, 32 bits. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, bound). */
  int(bound: number): number;
  pick<T>(items: readonly T[]): T;
}

/** mulberry32 from a numeric seed: tiny, fast, and good enough for fixtures; uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** mulberry32 seeded by a string (hashed with FNV-1a). */
export function prng(seed: string): Prng {
  const next = mulberry32(hashString(seed));
  const int = (bound: number): number => Math.floor(next() * bound);
  const pick = <T>(items: readonly T[]): T => {
    const item = items[int(items.length)];
    if (item === undefined) throw new Error('prng.pick: empty list');
    return item;
  };
  return { next, int, pick };
}
