/**
 * Infinite spaces: URL families that keep producing new URLs without new content (a calendar, a faceted
 * search, a session token in every link). No URL rule sees them: each URL is new, shallow and has no
 * repeated segment. What gives them away is that their pages keep saying the same thing.
 *
 * A URL's **shape** is its host and path with the variable parts abstracted (runs of digits: `{n}`, so
 * dates and numbers; long hex or mixed tokens: `{id}`), plus the sorted names of its query parameters
 * (values dropped): `/events/2024/06/15` -> `/events/{n}/{n}/{n}`, `/search?size=m&color=red` ->
 * `/search?color&size`. A URL with a query also belongs to its path's **family** (`/search?*`), so
 * facets that combine other parameter names still add up in one place.
 *
 * Each fetched page (2xx with text) of a shape or family is compared with the first distinct pages of
 * it (up to SHAPE_REFERENCES) by its **template hash**: the simhash of its excerpt (the first 2,000
 * characters of its visible text, as the fetcher sends it) with every run of digits made `0`, so pages
 * of one template that differ only by a date, a count or a page number hash alike. Within
 * SHAPE_NEAR_DISTANCE bits it is "the same again". Once
 * SHAPE_MIN_PAGES pages of a shape are fetched and at least SHAPE_SAME_SHARE of them were the same
 * again, the shape is a trap: its new URLs are refused at admission and its queued ones at the cut,
 * both counted under `trap-shape`, without a request.
 *
 * Why these numbers (measured 2026-12-03, each page against the first four of its shape): the hostile
 * host's calendar, month and facet pages are 0 bits apart by template hash (5-9 by plain simhash);
 * distinct pages of one shape were never closer than 12 bits on the test web (2 hosts of 200 `full`
 * pages, 12-39), 14 on 2 hosts of 1,000 `bench` pages, 12 on the PostgreSQL 15 manual's 1,173 pages
 * (`release-15-N.html` and the like). 6 sits between, and a shape needs 70 % of its pages "the same
 * again" besides. A trap costs its first SHAPE_MIN_PAGES pages plus what was queued of it by then.
 *
 * Memory: MAX_TRACKED_SHAPES shapes with statistics (about 250 bytes each; the least recently fetched
 * are forgotten first), MAX_TRAP_SHAPES traps remembered (the oldest forgotten first).
 */
import { hammingDistance, simhash } from '../../shared/simhash.js';

/** The template hash of a page's excerpt: its simhash with every run of digits made `0`. Pure. */
export function templateHash(excerpt: string): string {
  return simhash(excerpt.replace(/[0-9]+/g, '0'));
}

/** The refusal code of a URL whose shape is a trap; a crawl-rule code like `trap-repeated-segment`. */
export const TRAP_SHAPE_CODE = 'trap-shape';
/** Simhash bits within which a page of a shape is the same again. */
export const SHAPE_NEAR_DISTANCE = 6;
/** Pages of a shape fetched before it can be judged. */
export const SHAPE_MIN_PAGES = 10;
/** Share of "the same again" pages that makes a shape a trap. */
export const SHAPE_SAME_SHARE = 0.7;
/** Distinct pages of a shape kept to compare with. */
export const SHAPE_REFERENCES = 4;
export const MAX_TRACKED_SHAPES = 10_000;
export const MAX_TRAP_SHAPES = 10_000;
/** Traps shown in the status at most. */
export const MAX_SHOWN_TRAPS = 50;

const ID_TOKEN = /^(?:[0-9a-f]{8,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const MIXED_TOKEN = /^[A-Za-z0-9_-]{16,}$/;

function abstractPart(part: string): string {
  if (/[0-9]/.test(part) && (ID_TOKEN.test(part) || (MIXED_TOKEN.test(part) && /[A-Za-z]/.test(part)))) return '{id}';
  return part.replace(/[0-9]+/g, '{n}');
}

/** The shape of a URL and, when it has a query, its family. Pure. */
export function urlShapeOf(url: string): { shape: string; family: string | null } {
  const parsed = new URL(url);
  const path = parsed.pathname.split('/').map(abstractPart).join('/');
  const base = `${parsed.host}${path}`;
  if (parsed.search.length <= 1) return { shape: base, family: null };
  const names = [...new Set([...parsed.searchParams.keys()].map(abstractPart))].sort();
  return { shape: `${base}?${names.join('&')}`, family: `${base}?*` };
}

export interface ShapeStats {
  /** Pages of the shape fetched (2xx with text). */
  pages: number;
  /** Of those, the ones within SHAPE_NEAR_DISTANCE of an earlier distinct page. */
  same: number;
  /** Template hashes of the first distinct pages. */
  readonly references: string[];
}

/** A page of the shape was fetched: its statistics after it. Pure (returns a new object). */
export function withPage(stats: ShapeStats, simhash: string): ShapeStats {
  const same = stats.references.some((reference) => hammingDistance(reference, simhash) <= SHAPE_NEAR_DISTANCE);
  return {
    pages: stats.pages + 1,
    same: stats.same + (same ? 1 : 0),
    references: same || stats.references.length >= SHAPE_REFERENCES ? stats.references : [...stats.references, simhash],
  };
}

/** Whether a shape's pages keep being the same again. Pure. */
export function isTrapShape(stats: ShapeStats): boolean {
  return stats.pages >= SHAPE_MIN_PAGES && stats.same >= SHAPE_SAME_SHARE * stats.pages;
}

/** A shape found to be a trap, as the status shows it (`trapShapes`). */
export interface TrapShape {
  readonly shape: string;
  /** Pages fetched when it was judged, and how many of them were the same again. */
  readonly pages: number;
  readonly nearDuplicates: number;
  /** URLs refused since (`trap-shape`). */
  refused: number;
  /** ms since epoch */
  readonly since: number;
}

export class UrlShapes {
  readonly #stats = new Map<string, ShapeStats>();
  readonly #traps = new Map<string, TrapShape>();
  /** Hosts with a trap: URLs of other hosts are not even shaped. */
  readonly #trapHosts = new Map<string, number>();

  /** A page of the URL was fetched with this excerpt of its visible text (not empty). */
  recordPage(url: string, excerpt: string, now: number): void {
    const hash = templateHash(excerpt);
    const { shape, family } = urlShapeOf(url);
    this.#record(shape, hash, now);
    if (family !== null) this.#record(family, hash, now);
  }

  /** The trap shape (or family) the URL belongs to, or null. */
  trapOf(url: string): TrapShape | null {
    if (this.#traps.size === 0) return null;
    const host = hostOf(url);
    if (host === null || !this.#trapHosts.has(host)) return null;
    const { shape, family } = urlShapeOf(url);
    return this.#traps.get(shape) ?? (family === null ? null : (this.#traps.get(family) ?? null));
  }

  /** The traps, the most recent first, at most MAX_SHOWN_TRAPS. */
  list(): TrapShape[] {
    return [...this.#traps.values()].reverse().slice(0, MAX_SHOWN_TRAPS).map((trap) => ({ ...trap }));
  }

  /** A new crawl: every shape is judged again. */
  clear(): void {
    this.#stats.clear();
    this.#traps.clear();
    this.#trapHosts.clear();
  }

  #record(key: string, simhash: string, now: number): void {
    if (this.#traps.has(key)) return;
    const before = this.#stats.get(key) ?? { pages: 0, same: 0, references: [] };
    const after = withPage(before, simhash);
    // Most recently fetched last, so the first key is the one to forget.
    this.#stats.delete(key);
    if (isTrapShape(after)) {
      this.#addTrap({ shape: key, pages: after.pages, nearDuplicates: after.same, refused: 0, since: now });
      return;
    }
    this.#stats.set(key, after);
    if (this.#stats.size > MAX_TRACKED_SHAPES) this.#stats.delete(this.#stats.keys().next().value!);
  }

  #addTrap(trap: TrapShape): void {
    this.#traps.set(trap.shape, trap);
    const host = trap.shape.slice(0, trap.shape.indexOf('/'));
    this.#trapHosts.set(host, (this.#trapHosts.get(host) ?? 0) + 1);
    if (this.#traps.size > MAX_TRAP_SHAPES) {
      const oldest = this.#traps.keys().next().value!;
      this.#traps.delete(oldest);
      const oldHost = oldest.slice(0, oldest.indexOf('/'));
      const left = (this.#trapHosts.get(oldHost) ?? 1) - 1;
      if (left === 0) this.#trapHosts.delete(oldHost);
      else this.#trapHosts.set(oldHost, left);
    }
  }
}

function hostOf(url: string): string | null {
  const start = url.indexOf('//');
  if (start < 0) return null;
  const end = url.indexOf('/', start + 2);
  return end < 0 ? url.slice(start + 2) : url.slice(start + 2, end);
}
