/**
 * Parsed robots.txt files, a bounded cache by origin (least recently used first out). A parsed file
 * (robots-parser's rule lists) is the one part of an origin's robots state that grows with what the
 * web sends: up to 512 KiB of text each. So the queue server keeps an origin's small facts (kind,
 * Crawl-delay, expiry: origin-robots.ts) for every origin it holds, and the parsed rules only for the
 * origins used lately; a miss parses the file again from where it is stored (robots-store.ts).
 *
 * Bound: at most `maxFiles` files and `maxChars` characters of robots.txt text together (a parsed file
 * is a small multiple of its text). The entry in use is never evicted by its own insertion, so one file
 * larger than the bound is still held until the next one comes in.
 */
export interface ParsedRobotsCacheOptions {
  readonly maxFiles: number;
  readonly maxChars: number;
}

export const PARSED_ROBOTS_CACHE: ParsedRobotsCacheOptions = Object.freeze({ maxFiles: 1_000, maxChars: 8 * 1024 * 1024 });

interface Entry<T> {
  /** Which fetch of the origin's robots.txt it was parsed from (ms since epoch). */
  readonly fetchedAt: number;
  readonly parsed: T;
  readonly chars: number;
}

export class ParsedRobotsCache<T> {
  readonly #options: ParsedRobotsCacheOptions;
  /** Map order is recency: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry<T>>();
  #chars = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: ParsedRobotsCacheOptions = PARSED_ROBOTS_CACHE) {
    this.#options = options;
  }

  /** The parsed file of that fetch, or undefined (not held, or parsed from another fetch). */
  get(origin: string, fetchedAt: number): T | undefined {
    const entry = this.#entries.get(origin);
    if (entry === undefined || entry.fetchedAt !== fetchedAt) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#entries.delete(origin);
    this.#entries.set(origin, entry);
    return entry.parsed;
  }

  set(origin: string, fetchedAt: number, parsed: T, chars: number): void {
    this.delete(origin);
    this.#entries.set(origin, { fetchedAt, parsed, chars });
    this.#chars += chars;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.#options.maxFiles && this.#chars <= this.#options.maxChars) break;
      if (oldest === origin) break;
      this.#entries.delete(oldest);
      this.#chars -= entry.chars;
    }
  }

  delete(origin: string): void {
    const entry = this.#entries.get(origin);
    if (entry === undefined) return;
    this.#entries.delete(origin);
    this.#chars -= entry.chars;
  }

  stats(): { files: number; chars: number; hits: number; misses: number } {
    return { files: this.#entries.size, chars: this.#chars, hits: this.#hits, misses: this.#misses };
  }
}
