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
 * again, and the shape's own pages keep producing new URLs of it (at least SHAPE_PRODUCED_SHARE per
 * page fetched: the "keeps producing new URLs" of an infinite space), the shape is a trap: its new URLs
 * are refused at admission and its queued ones at the cut, both counted under `trap-shape`, without a
 * request. Without the second condition the rule cost rust-doc 83 pages (17,991 fetched instead of
 * the 18,074 its body and link limits let any crawl reach; measured 2026-12-03 with scripts/bench-crawl,
 * corpus large): its SIMD intrinsics and vector types are one template per family, but their module
 * index lists them all and they do not lead to each other.
 *
 * Why these numbers (measured 2026-12-03, each page against the first four of its shape): the hostile
 * host's calendar, month and facet pages are 0 bits apart by template hash (5-9 by plain simhash);
 * distinct pages of one shape were never closer than 12 bits on the test web (2 hosts of 200 `full`
 * pages, 12-39), 14 on 2 hosts of 1,000 `bench` pages, 12 on the PostgreSQL 15 manual's 1,173 pages
 * (`release-15-N.html` and the like). 6 sits between, and a shape needs 70 % of its pages "the same
 * again" besides. A trap costs its first SHAPE_MIN_PAGES pages plus what was queued of it by then.
 *
 * The **fan-out rule** catches what the first rule cannot: an infinite space whose pages do differ (a
 * link farm or crawler tarpit of generated prose, a "related searches" tree), whose links only ever lead
 * on to more URLs of the same shape. For each fetched page, admission tells what its links led to
 * (`PageFanOut`): new URLs of the page's own shape (or family), links to URLs of it already known, new
 * URLs elsewhere. A page **leads only onward** when it gave at least one new URL of its shape and linked
 * to no known one. The pages of a shape are judged in windows of FANOUT_WINDOW pages: when at least
 * FANOUT_ONWARD_SHARE of a window's pages led only onward and at most FANOUT_ELSEWHERE_SHARE of the new
 * URLs they gave were of other shapes, the shape is a trap (reason `fan-out`), refused as above.
 *
 * Why links to known pages of the shape decide: by its links alone, a finite site whose pages are one
 * shape looks like an infinite space while it is being discovered (the test web's hosts are one shape,
 * `/section-{n}/page-{n}.html`, each page linking to four new children). What the finite site's pages
 * also do is link back: to a parent, to siblings, to pages met before, and more so the further the crawl
 * gets. Measured 2026-12-03: on the test web, at most about half the pages of a window lead only onward
 * (a page found through a random link may have an unknown parent), in the PostgreSQL manual far fewer;
 * the tarpit's pages all do. What it does not catch: an endless chain or calendar whose pages link back
 * to the one before (next and previous page, day): each page gives one new URL and links to a known one,
 * exactly as a long finite pagination does; with the same template it falls to the first rule, with
 * distinct text to the per-host budget only.
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
/** New URLs of a shape its own pages gave, per page fetched, at least, for the near-duplicate rule. */
export const SHAPE_PRODUCED_SHARE = 0.5;
/** Distinct pages of a shape kept to compare with. */
export const SHAPE_REFERENCES = 4;
export const MAX_TRACKED_SHAPES = 10_000;
export const MAX_TRAP_SHAPES = 10_000;
/** Pages of a shape per fan-out window. */
export const FANOUT_WINDOW = 40;
/** Share of a window's pages that led only onward (new URLs of their shape, no known one) to make a trap. */
export const FANOUT_ONWARD_SHARE = 0.9;
/** Share of the new URLs a window's pages gave that may be of other shapes, at most, for a trap. */
export const FANOUT_ELSEWHERE_SHARE = 0.1;
/** Traps shown in the status at most. */
export const MAX_SHOWN_TRAPS = 50;

const ID_TOKEN = /^(?:[0-9a-f]{8,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const MIXED_TOKEN = /^[A-Za-z0-9_-]{16,}$/;

/** A path segment or parameter name with ids made `{id}` and other digit runs `{n}`. */
function abstractPart(part: string): string {
  if (/[0-9]/.test(part) && (ID_TOKEN.test(part) || (MIXED_TOKEN.test(part) && /[A-Za-z]/.test(part)))) return '{id}';
  return part.replace(/[0-9]+/g, '{n}');
}

const enum Char {
  Slash = 0x2f,
  Zero = 0x30,
  Nine = 0x39,
  Dash = 0x2d,
  Underscore = 0x5f,
}

/**
 * `abstractPart` of each segment of `path` (from `start` to `end`, which starts with '/'), joined by
 * '/' again: the same string, found by scanning char codes rather than by splitting and three or four
 * regular expressions a segment (admission asks it for every same-host link of every page: 3.8 % of a
 * queue server's time at 2.6 million known URLs). Segments without a digit are copied as they are; the
 * rest go through `abstractPart` only when they could be an id, else their digit runs become `{n}`.
 */
function abstractPath(url: string, start: number, end: number): string {
  let digit = start;
  while (digit < end && (url.charCodeAt(digit) < Char.Zero || url.charCodeAt(digit) > Char.Nine)) digit++;
  if (digit === end) return url.slice(start, end);
  let out = '';
  let from = start;
  for (let at = start; at <= end; at++) {
    if (at < end && url.charCodeAt(at) !== Char.Slash) continue;
    // url[from, at) is '/' plus a segment, or the first segment's '/' alone at `start`.
    out += from === at ? '' : abstractSegment(url, from, at);
    from = at;
  }
  return out;
}

/** `url[from, to)`: a '/' followed by a segment, abstracted as `abstractPart` would. */
function abstractSegment(url: string, from: number, to: number): string {
  let digits = false;
  let letters = false;
  let hexOnly = true;
  let wordOnly = true;
  for (let at = from + 1; at < to; at++) {
    const code = url.charCodeAt(at);
    if (code >= Char.Zero && code <= Char.Nine) digits = true;
    else {
      const lower = code | 0x20;
      if (lower >= 0x61 && lower <= 0x7a) {
        letters = true;
        if (lower > 0x66) hexOnly = false;
      } else {
        hexOnly = false;
        if (code !== Char.Dash && code !== Char.Underscore) wordOnly = false;
      }
    }
  }
  if (!digits) return url.slice(from, to);
  const length = to - from - 1;
  // The id tokens of ID_TOKEN and MIXED_TOKEN need one of these; a UUID has dashes, so it is not hexOnly.
  if ((hexOnly && length >= 8) || length === 36 || (wordOnly && letters && length >= 16)) return `/${abstractPart(url.slice(from + 1, to))}`;
  let out = '/';
  let run = from + 1;
  for (let at = from + 1; at < to; at++) {
    const code = url.charCodeAt(at);
    if (code < Char.Zero || code > Char.Nine) continue;
    out += url.slice(run, at);
    while (at + 1 < to && url.charCodeAt(at + 1) >= Char.Zero && url.charCodeAt(at + 1) <= Char.Nine) at++;
    out += '{n}';
    run = at + 1;
  }
  return out + url.slice(run, to);
}

/**
 * The shape of a URL and, when it has a query, its family. Pure. Read from the string (a normalized
 * URL: lower-case host, no default port, no fragment), not through `new URL`, because admission asks
 * it for every same-host link of every page.
 */
export function urlShapeOf(url: string): { shape: string; family: string | null } {
  const hostStart = url.indexOf('//') + 2;
  let end = url.indexOf('#', hostStart);
  if (end < 0) end = url.length;
  let queryStart = url.indexOf('?', hostStart);
  if (queryStart < 0 || queryStart > end) queryStart = end;
  let pathStart = url.indexOf('/', hostStart);
  if (pathStart < 0 || pathStart > queryStart) pathStart = queryStart;
  const path = pathStart < queryStart ? abstractPath(url, pathStart, queryStart) : '/';
  const base = `${url.slice(hostStart, pathStart)}${path}`;
  if (queryStart + 1 >= end) return { shape: base, family: null };
  const names = [...new Set([...new URLSearchParams(url.slice(queryStart + 1, end)).keys()].map(abstractPart))].sort();
  return { shape: `${base}?${names.join('&')}`, family: `${base}?*` };
}

export interface ShapeStats {
  /** Pages of the shape fetched (2xx with text). */
  pages: number;
  /** Of those, the ones within SHAPE_NEAR_DISTANCE of an earlier distinct page. */
  same: number;
  /** Template hashes of the first distinct pages. */
  readonly references: string[];
  /** New URLs of the shape its pages' links gave, since the shape was first met. */
  readonly produced?: number;
  /** The fan-out window so far: pages whose links were counted, */
  readonly linkPages?: number;
  /** of them those that led only onward, */
  readonly onward?: number;
  /** and the new URLs their links gave, of the shape and elsewhere. */
  readonly newOfShape?: number;
  readonly newElsewhere?: number;
}

/** What the links of one fetched page led to, for its shape or its family (counted by `PageFanOut`). */
export interface PageLinks {
  /** New URLs of the shape (admitted from this page). */
  readonly newOfShape: number;
  /** Links to URLs of the shape that were already known. */
  readonly knownOfShape: number;
  /** New URLs of any other shape or host. */
  readonly newElsewhere: number;
}

/** A page's links join its shape's fan-out window. Pure (returns a new object). */
export function withLinks(stats: ShapeStats, page: PageLinks): ShapeStats {
  const onward = page.newOfShape > 0 && page.knownOfShape === 0;
  return {
    ...stats,
    produced: (stats.produced ?? 0) + page.newOfShape,
    linkPages: (stats.linkPages ?? 0) + 1,
    onward: (stats.onward ?? 0) + (onward ? 1 : 0),
    newOfShape: (stats.newOfShape ?? 0) + page.newOfShape,
    newElsewhere: (stats.newElsewhere ?? 0) + page.newElsewhere,
  };
}

/** Whether a full fan-out window says the shape only ever leads on to more of itself. Pure. */
export function isFanOutTrap(stats: ShapeStats): boolean {
  const pages = stats.linkPages ?? 0;
  const newOfShape = stats.newOfShape ?? 0;
  const newElsewhere = stats.newElsewhere ?? 0;
  return pages >= FANOUT_WINDOW && (stats.onward ?? 0) >= FANOUT_ONWARD_SHARE * pages && newElsewhere <= FANOUT_ELSEWHERE_SHARE * (newOfShape + newElsewhere);
}

/** A fan-out window judged and not a trap: the next one starts empty. Pure. */
function nextWindow(stats: ShapeStats): ShapeStats {
  return { pages: stats.pages, same: stats.same, references: stats.references, produced: stats.produced ?? 0 };
}

/** A page of the shape was fetched: its statistics after it. Pure (returns a new object). */
export function withPage(stats: ShapeStats, simhash: string): ShapeStats {
  const same = stats.references.some((reference) => hammingDistance(reference, simhash) <= SHAPE_NEAR_DISTANCE);
  return {
    ...stats,
    pages: stats.pages + 1,
    same: stats.same + (same ? 1 : 0),
    references: same || stats.references.length >= SHAPE_REFERENCES ? stats.references : [...stats.references, simhash],
  };
}

/**
 * Whether a shape's pages keep being the same again while they keep producing new URLs of it. Pure.
 * Both: a family of generated pages that are one template but that nothing of the family leads on to
 * (rust-doc's SIMD intrinsics, `fn.vld{n}q_lane_s{n}.html`, all listed by their module's index) is a
 * finite set of real pages, not an infinite space.
 */
export function isTrapShape(stats: ShapeStats): boolean {
  return stats.pages >= SHAPE_MIN_PAGES && stats.same >= SHAPE_SAME_SHARE * stats.pages && (stats.produced ?? 0) >= SHAPE_PRODUCED_SHARE * stats.pages;
}

/** Why a shape is a trap: its pages kept being the same template, or kept leading only to new URLs of it. */
export type TrapReason = 'near-duplicates' | 'fan-out';

/** A shape found to be a trap, as the status shows it (`trapShapes`). */
export interface TrapShape {
  readonly shape: string;
  readonly reason: TrapReason;
  /** Pages judged: fetched (near-duplicates) or of the fan-out window (fan-out), */
  readonly pages: number;
  /** how many of them were the same again (near-duplicates), */
  readonly nearDuplicates: number;
  /** how many led only onward, and the new URLs they gave of the shape and elsewhere (fan-out; else 0). */
  readonly onwardPages: number;
  readonly newOfShape: number;
  readonly newElsewhere: number;
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
      this.#addTrap({ shape: key, reason: 'near-duplicates', pages: after.pages, nearDuplicates: after.same, onwardPages: 0, newOfShape: 0, newElsewhere: 0, refused: 0, since: now });
      return;
    }
    this.#keep(key, after);
  }

  /**
   * A counter for what the links of a fetched page of `url` lead to (admission.ts feeds it each link,
   * then hands it to `recordLinks`), or null when neither its shape nor its family is being judged.
   */
  fanOutOf(url: string): PageFanOut | null {
    const { shape, family } = urlShapeOf(url);
    const judgeShape = !this.#traps.has(shape);
    const judgeFamily = family !== null && !this.#traps.has(family);
    if (!judgeShape && !judgeFamily) return null;
    return new PageFanOut(url, judgeShape ? shape : null, judgeFamily ? family : null);
  }

  /** A page's links were admitted: its shape's and family's fan-out windows take them. */
  recordLinks(fanOut: PageFanOut, now: number): void {
    if (fanOut.shape !== null) this.#recordLinks(fanOut.shape, fanOut.ofShape, now);
    if (fanOut.family !== null) this.#recordLinks(fanOut.family, fanOut.ofFamily, now);
  }

  #recordLinks(key: string, page: PageLinks, now: number): void {
    if (this.#traps.has(key)) return;
    const after = withLinks(this.#stats.get(key) ?? { pages: 0, same: 0, references: [] }, page);
    this.#stats.delete(key);
    if (isFanOutTrap(after)) {
      this.#addTrap({ shape: key, reason: 'fan-out', pages: after.linkPages!, nearDuplicates: after.same, onwardPages: after.onward!, newOfShape: after.newOfShape!, newElsewhere: after.newElsewhere!, refused: 0, since: now });
      return;
    }
    this.#keep(key, (after.linkPages ?? 0) >= FANOUT_WINDOW ? nextWindow(after) : after);
  }

  /** Most recently fetched last, so the first key is the one to forget. */
  #keep(key: string, stats: ShapeStats): void {
    this.#stats.set(key, stats);
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

/**
 * What the links of one fetched page lead to, for its shape and its family: each in-scope link is
 * `link`ed with whether admission found it new. Links of other hosts are another shape by definition
 * (a shape starts with its host), so only same-host links are shaped.
 */
export class PageFanOut {
  readonly shape: string | null;
  readonly family: string | null;
  readonly #sameHost: string;
  readonly ofShape = { newOfShape: 0, knownOfShape: 0, newElsewhere: 0 };
  readonly ofFamily = { newOfShape: 0, knownOfShape: 0, newElsewhere: 0 };

  constructor(pageUrl: string, shape: string | null, family: string | null) {
    this.shape = shape;
    this.family = family;
    const hostEnd = pageUrl.indexOf('/', pageUrl.indexOf('//') + 2);
    this.#sameHost = hostEnd < 0 ? pageUrl : pageUrl.slice(0, hostEnd + 1);
  }

  link(url: string, isNew: boolean): void {
    if (!url.startsWith(this.#sameHost)) {
      if (isNew) {
        this.ofShape.newElsewhere++;
        this.ofFamily.newElsewhere++;
      }
      return;
    }
    const { shape, family } = urlShapeOf(url);
    count(this.ofShape, this.shape !== null && shape === this.shape, isNew);
    count(this.ofFamily, this.family !== null && family === this.family, isNew);
  }
}

function count(links: { newOfShape: number; knownOfShape: number; newElsewhere: number }, ofShape: boolean, isNew: boolean): void {
  if (ofShape) {
    if (isNew) links.newOfShape++;
    else links.knownOfShape++;
  } else if (isNew) links.newElsewhere++;
}

function hostOf(url: string): string | null {
  const start = url.indexOf('//');
  if (start < 0) return null;
  const end = url.indexOf('/', start + 2);
  return end < 0 ? url.slice(start + 2) : url.slice(start + 2, end);
}
