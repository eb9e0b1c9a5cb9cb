/**
 * The made-up web of the scale benchmark: a deterministic link graph over many hosts, the same in
 * every run for the same options (mulberry32 from scripts/test-web/prng.ts, seeded per page), so a
 * page's links never depend on the order the crawl fetched it in.
 *
 * A URL of the model is a (host, page) pair, numbered `id = host * MAX_HOST_PAGES + page`:
 *  - host h is `http://127.A.B.C` with A.B.C = h + 65,536 (127.1.0.0 and up: loopback names that are
 *    never contacted; the fleet of the benchmark makes every answer up, and 127.0.0.1, where the queue
 *    server listens, is not one of them);
 *  - page 0 is `/`, page p is `/p/<p>.html`; host h has `sizeOf(h)` pages, log-uniform in
 *    [1, MAX_HOST_PAGES) (many small hosts, a few big ones; mean about 270, so 100,000 hosts hold
 *    about 27 million URLs).
 *
 * The links of page p of host h, `links` of them in all:
 *  - its `newLinks` children p * newLinks + 1 ... in the host's page tree (each page has one parent, so
 *    a child is new when its parent is fetched, unless a navigation link found it first);
 *  - `crossLinks` links to one of the first 4 pages of a random host (how hosts are discovered);
 *  - the rest navigation within the host to pages 0 ... p (mostly known already).
 * So a fetched page adds about `newLinks` URLs to the crawl while its host has room, and the rest of
 * its links are looked up and found seen: the load of a large crawl's admission.
 */
import { mulberry32 } from '../test-web/prng.js';

/** Page numbers per host are below this; a URL's id is host * MAX_HOST_PAGES + page. */
export const MAX_HOST_PAGES = 2048;
/** The first host is 127.1.0.0: host h has the address 127.0.0.0 + HOST_OFFSET + h. */
const HOST_OFFSET = 65_536;
/** Hosts at most: ids stay below 2^31 (they are kept in Int32Arrays). */
export const MAX_HOSTS = 1_000_000;

export interface GraphOptions {
  hosts: number;
  links: number;
  newLinks: number;
  crossLinks: number;
  seed: number;
}

/** The murmur3 finalizer: spreads an integer's bits, so that neighbouring ids seed unrelated streams. */
export function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class GraphModel {
  readonly options: GraphOptions;
  /** `http://127.A.B.C` of every host. */
  readonly origins: readonly string[];
  readonly #paths: string[];
  readonly #sizes: Uint16Array;
  readonly #seedMix: number;

  constructor(options: GraphOptions) {
    if (!(options.hosts >= 1 && options.hosts <= MAX_HOSTS)) throw new RangeError(`hosts must be in [1, ${MAX_HOSTS}], got ${options.hosts}`);
    if (options.newLinks + options.crossLinks > options.links) throw new RangeError('newLinks + crossLinks must not exceed links');
    this.options = options;
    this.#seedMix = mix32(options.seed ^ 0x9e3779b9);
    const origins: string[] = [];
    this.#sizes = new Uint16Array(options.hosts);
    for (let h = 0; h < options.hosts; h++) {
      const a = h + HOST_OFFSET;
      origins.push(`http://127.${a >>> 16}.${(a >>> 8) & 255}.${a & 255}`);
      const u = mulberry32(mix32(this.#seedMix ^ Math.imul(h + 1, 0x27d4eb2d)))();
      this.#sizes[h] = Math.max(1, Math.floor(2 ** (u * Math.log2(MAX_HOST_PAGES))));
    }
    this.origins = origins;
    this.#paths = Array.from({ length: MAX_HOST_PAGES }, (_, p) => (p === 0 ? '/' : `/p/${p}.html`));
  }

  /** Pages host h has. */
  sizeOf(host: number): number {
    return this.#sizes[host]!;
  }

  /** URLs the model holds in all. */
  get capacity(): number {
    let total = 0;
    for (const size of this.#sizes) total += size;
    return total;
  }

  url(id: number): string {
    return this.#origin(id) + this.#paths[id % MAX_HOST_PAGES]!;
  }

  #origin(id: number): string {
    return this.origins[Math.floor(id / MAX_HOST_PAGES)]!;
  }

  /** The id of a URL of the model (as the queue server normalizes it), or null for any other string. */
  idOf(url: string): number | null {
    if (!url.startsWith('http://127.')) return null;
    const slash = url.indexOf('/', 7);
    if (slash < 0) return null;
    const octets = url.slice(7, slash).split('.');
    if (octets.length !== 4) return null;
    const host = ((Number(octets[1]) << 16) | (Number(octets[2]) << 8) | Number(octets[3])) - HOST_OFFSET;
    if (!(host >= 0 && host < this.options.hosts)) return null;
    const path = url.slice(slash);
    const page = path === '/' ? 0 : path.startsWith('/p/') && path.endsWith('.html') ? Number(path.slice(3, -5)) : Number.NaN;
    if (!Number.isInteger(page) || page < 0 || page >= this.#sizes[host]!) return null;
    const id = host * MAX_HOST_PAGES + page;
    // Only the one spelling the model writes (no leading zeros, no port) is its URL.
    return this.url(id) === url ? id : null;
  }

  /** Writes the ids of page `id`'s links into `out` (at least `links` long); returns how many. */
  linksOf(id: number, out: Int32Array): number {
    const { links, newLinks, crossLinks, hosts } = this.options;
    const host = Math.floor(id / MAX_HOST_PAGES);
    const page = id % MAX_HOST_PAGES;
    const size = this.#sizes[host]!;
    const base = host * MAX_HOST_PAGES;
    const random = mulberry32(mix32(id ^ this.#seedMix));
    let n = 0;
    for (let k = 1; k <= newLinks; k++) {
      const child = page * newLinks + k;
      if (child < size) out[n++] = base + child;
    }
    for (let k = 0; k < crossLinks; k++) {
      const other = Math.floor(random() * hosts);
      out[n++] = other * MAX_HOST_PAGES + Math.floor(random() * Math.min(4, this.#sizes[other]!));
    }
    while (n < links) out[n++] = base + Math.floor(random() * (page + 1));
    return n;
  }
}
