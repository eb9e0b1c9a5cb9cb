/**
 * Generations: how the web changes between two crawl passes, so a test can crawl, call
 * `setGeneration(1)` and recrawl. Pure: (node, pagesPerHost, generation) in, change out. The server and
 * the model both read `pageChange`, so what is served and what `SiteModel.changes()` reports agree.
 *
 * Generation 0 is the web as first served. Generation 1 (and every later one, which is the same) changes
 * generated content pages of every normal host (node >= 1; never /index.html, robots.txt, the main host's
 * special pages or the special hosts), with section K, page N as in graph.ts:
 *
 *   page-3 of every section                  text changed: new prose, same title and links
 *   in each pattern section (below):
 *     page-4                                 404
 *     page-5                                 410
 *     page-6                                 301 to page-2 of the same section
 *     page-7                                 500 for its first FLAKY_FAILURES requests, then generation 0
 *     page-8                                 byte-identical copy of page-1 of the same section
 *     page-9                                 page-2 of the same section with NEAR_COPY_WORDS words changed
 *
 * Pattern sections: the last section that has a page-9, and every tenth section below it, as long as its
 * pages 4-9 are leaves of the 4-ary tree. Only leaves vanish, move or turn into copies, so every
 * generation-0 page keeps its tree path from the index (text-changed and flaky pages keep their links,
 * the index never changes) and a recrawl from the seeds finds them all. Pages 1, 2 and 10 of a pattern
 * section never change, so redirect targets and copy sources are unchanged pages; copies take their
 * source from their own section, so relative links in the copied HTML resolve to the same pages.
 * Every category is non-empty on every host when pagesPerHost >= 20.
 */
import { isTreeLeaf, nodePath, PAGES_PER_SECTION } from './graph.js';

/** Requests to a flaky page that answer 500, counted per URL from the last setGeneration(). */
export const FLAKY_FAILURES = 2;
/** Words a near copy changes in its source's first paragraph. */
export const NEAR_COPY_WORDS = 3;
/** Last-Modified of every URL whose bytes differ from generation 0 (IMF-fixdate, RFC 9110 §5.6.7). */
export const CHANGED_LAST_MODIFIED = 'Mon, 01 Jul 2024 00:00:00 GMT';

/** What a generated page of a normal host serves in one generation, relative to generation 0. */
export type PageChange =
  | { kind: 'unchanged' }
  | { kind: 'text' }
  | { kind: 'gone'; status: 404 | 410 }
  | { kind: 'redirect'; to: number }
  | { kind: 'flaky'; failures: number }
  | { kind: 'exact-copy'; of: number }
  | { kind: 'near-copy'; of: number };

const UNCHANGED: PageChange = { kind: 'unchanged' };
const TEXT_PAGE = 3;
const PATTERN_FIRST_PAGE = 4;
const PATTERN_LAST_PAGE = 9;
/** Pattern sections recur every this many sections, counting down from the last one. */
const PATTERN_SECTION_STRIDE = 10;

/** Ground truth of what differs from generation 0; URLs canonical, in host then node order. */
export interface GenerationChanges {
  /** HTML text changed: new ETag, later Last-Modified, different body bytes. */
  changedText: string[];
  gone404: string[];
  gone410: string[];
  /** 301 to an unchanged page of the same host. */
  redirected: { url: string; to: string }[];
  /** 500 for the first `failures` requests in this generation, then 200 with the generation-0 body. */
  flaky: { url: string; failures: number }[];
  /** Body byte-identical to `of`'s (same ETag), Last-Modified later. */
  exactCopies: { url: string; of: string }[];
  /** Body equal to `of`'s except a few words: a near duplicate. Last-Modified later. */
  nearCopies: { url: string; of: string }[];
  /** Every other generated content page of the normal hosts (never /index.html). */
  unchanged: string[];
}

/** Generations >= 1 are all generation 1. */
function effective(generation: number): 0 | 1 {
  return generation >= 1 ? 1 : 0;
}

export function pageChange(node: number, count: number, generation: number): PageChange {
  if (effective(generation) === 0 || node <= 0 || node >= count) return UNCHANGED;
  const section = Math.floor((node - 1) / PAGES_PER_SECTION) + 1;
  const page = ((node - 1) % PAGES_PER_SECTION) + 1;
  if (page === TEXT_PAGE) return { kind: 'text' };
  if (!isPatternSection(section, count)) return UNCHANGED;
  const pageOne = node - page + 1;
  switch (page) {
    case 4:
      return { kind: 'gone', status: 404 };
    case 5:
      return { kind: 'gone', status: 410 };
    case 6:
      return { kind: 'redirect', to: pageOne + 1 };
    case 7:
      return { kind: 'flaky', failures: FLAKY_FAILURES };
    case 8:
      return { kind: 'exact-copy', of: pageOne };
    case 9:
      return { kind: 'near-copy', of: pageOne + 1 };
    default:
      return UNCHANGED;
  }
}

function isPatternSection(section: number, count: number): boolean {
  const firstNode = (section - 1) * PAGES_PER_SECTION;
  // Leaves are a suffix of the nodes, so page-4 being a leaf makes pages 5-9 leaves too.
  if (!isTreeLeaf(firstNode + PATTERN_FIRST_PAGE, count)) return false;
  const lastNode = count - 1;
  if (lastNode < PATTERN_LAST_PAGE) return false;
  const lastPatternSection = Math.floor((lastNode - PATTERN_LAST_PAGE) / PAGES_PER_SECTION) + 1;
  return section <= lastPatternSection && (lastPatternSection - section) % PATTERN_SECTION_STRIDE === 0;
}

/** The changes of every normal host, as canonical URLs. */
export function generationChanges(normalOrigins: readonly string[], count: number, generation: number): GenerationChanges {
  const changes: GenerationChanges = { changedText: [], gone404: [], gone410: [], redirected: [], flaky: [], exactCopies: [], nearCopies: [], unchanged: [] };
  for (const origin of normalOrigins) {
    const urlOf = (node: number): string => `${origin}${nodePath(node)}`;
    for (let node = 1; node < count; node++) {
      const url = urlOf(node);
      const change = pageChange(node, count, generation);
      switch (change.kind) {
        case 'unchanged':
          changes.unchanged.push(url);
          break;
        case 'text':
          changes.changedText.push(url);
          break;
        case 'gone':
          (change.status === 404 ? changes.gone404 : changes.gone410).push(url);
          break;
        case 'redirect':
          changes.redirected.push({ url, to: urlOf(change.to) });
          break;
        case 'flaky':
          changes.flaky.push({ url, failures: change.failures });
          break;
        case 'exact-copy':
          changes.exactCopies.push({ url, of: urlOf(change.of) });
          break;
        case 'near-copy':
          changes.nearCopies.push({ url, of: urlOf(change.of) });
          break;
      }
    }
  }
  return changes;
}
