/**
 * The hostile host's infinite spaces: URL families that keep producing new URLs without new content.
 * Each URL is new, shallow and free of repeated segments, so no URL rule stops them; only noticing that
 * a family's pages say the same thing does. Pure: ground truth (`HOSTILE_TRAPS`, `trapOf`) and the
 * documents (`trapPage`), both from the same definitions.
 *
 *   trap       entry (linked from the index)           every page links to
 *   ---------  --------------------------------------  -------------------------------------------------
 *   calendar   /events/2024/06/15                      the previous and next day, month and year
 *   facets     /shop/search?category=shoes             one more or one other value of each facet, and
 *                                                      the next result page (names and values combine)
 *   session    /portal/home.html?visit=<token>         the portal's four pages, each with a new token
 *   tarpit     /stories/1.html                         four more stories, never one met before
 *
 * Calendar days say "no events"; every facet combination shows the same twelve products; every portal
 * page is the same text. The tarpit is the other kind (a link farm, a crawler tarpit of generated
 * prose): every story is different text, so no page is a near-duplicate of another, but its links only
 * ever lead on to new stories (story n links to 4n+1 .. 4n+4 and home). That is the ground truth a crawler is held to: each trap is to cost at most
 * TRAP_REQUEST_BUDGET requests, and nothing outside the traps may be lost.
 */
import { createHash } from 'node:crypto';
import { escapeAttribute, escapeText } from '../html.js';
import { prng } from '../prng.js';
import { paragraph } from '../text.js';

export type TrapName = 'calendar' | 'facets' | 'session' | 'tarpit';

export interface HostileTrap {
  readonly name: TrapName;
  /** Canonical path and query of the page the index links to. */
  readonly entry: string;
  readonly what: string;
  /** Whether a canonical path and query belongs to the trap. */
  matches(pathAndQuery: string): boolean;
}

/** What a sound crawler may spend on one trap, at most. */
export const TRAP_REQUEST_BUDGET = 500;

const CALENDAR = /^\/events\/([0-9]{4})\/([0-9]{2})\/([0-9]{2})$/;
const FACETS_PATH = '/shop/search';
const PORTAL = /^\/portal\/(home|news|about|contact)\.html\?visit=([0-9a-f]{12})$/;
const PORTAL_PAGES = ['home', 'news', 'about', 'contact'] as const;
const STORY = /^\/stories\/([1-9][0-9]{0,14})\.html$/;
/** Stories have at most 15 digits, so 4n + 4 stays an exact integer. */
const LAST_STORY = 999_999_999_999_999;

const COLORS = ['red', 'blue', 'green', 'black', 'white', 'grey'];
const SIZES = ['xs', 's', 'm', 'l', 'xl'];
const SORTS = ['price', 'name', 'newest'];
const FACETS: Record<string, readonly string[]> = { color: COLORS, size: SIZES, sort: SORTS };

function token(seed: string): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, 12);
}

export const HOSTILE_TRAPS: readonly HostileTrap[] = [
  {
    name: 'calendar',
    entry: '/events/2024/06/15',
    what: 'an infinite calendar: every day links to the previous and next day, month and year',
    matches: (p) => CALENDAR.test(p),
  },
  {
    name: 'facets',
    entry: `${FACETS_PATH}?category=shoes`,
    what: 'a faceted search: every combination of colour, size, sort and result page, the same twelve products',
    matches: (p) => p === FACETS_PATH || p.startsWith(`${FACETS_PATH}?`),
  },
  {
    name: 'session',
    entry: `/portal/home.html?visit=${token('entry')}`,
    what: 'a portal whose every link carries a new visit token (not a known session parameter)',
    matches: (p) => PORTAL.test(p),
  },
  {
    name: 'tarpit',
    entry: '/stories/1.html',
    what: 'a tarpit of generated stories: each one different text, each linking to four new stories',
    matches: (p) => STORY.test(p),
  },
];

/** The trap a canonical path and query belongs to, or null. */
export function trapOf(pathAndQuery: string): TrapName | null {
  return HOSTILE_TRAPS.find((trap) => trap.matches(pathAndQuery))?.name ?? null;
}

/** The document of a trap URL (path and query as requested, canonical), or null when it is none. */
export function trapPage(pathAndQuery: string, page: (title: string, body: string) => Buffer): Buffer | null {
  const day = CALENDAR.exec(pathAndQuery);
  if (day !== null) return calendarDay(Number(day[1]), Number(day[2]), Number(day[3]), page);
  if (pathAndQuery === FACETS_PATH || pathAndQuery.startsWith(`${FACETS_PATH}?`)) return facetPage(pathAndQuery, page);
  const portal = PORTAL.exec(pathAndQuery);
  if (portal !== null) return portalPage(portal[1]!, portal[2]!, page);
  const story = STORY.exec(pathAndQuery);
  if (story !== null) return storyPage(Number(story[1]), page);
  return null;
}

const BOILERPLATE =
  'Welcome to the community events calendar. Events are added by our volunteers every week, so please check back soon. ' +
  'You can browse by day, month or year with the links below, subscribe to updates, or suggest an event of your own through the form on the contact page.';

function calendarDay(year: number, month: number, day: number, page: (title: string, body: string) => Buffer): Buffer {
  const at = (deltaDays: number, deltaMonths: number, deltaYears: number): string => {
    const date = new Date(Date.UTC(year + deltaYears, month - 1 + deltaMonths, day + deltaDays));
    const y = Math.min(9999, Math.max(1000, date.getUTCFullYear()));
    return `/events/${y}/${String(date.getUTCMonth() + 1).padStart(2, '0')}/${String(date.getUTCDate()).padStart(2, '0')}`;
  };
  const nav: [string, string][] = [
    [at(-1, 0, 0), 'previous day'],
    [at(1, 0, 0), 'next day'],
    [at(0, -1, 0), 'previous month'],
    [at(0, 1, 0), 'next month'],
    [at(0, 0, -1), 'previous year'],
    [at(0, 0, 1), 'next year'],
    ['/index.html', 'home'],
  ];
  const date = `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
  return page(`Events on ${date}`, `<h1>Events on ${date}</h1><p>No events are scheduled for this day.</p><p>${BOILERPLATE}</p>${anchors(nav)}`);
}

const PRODUCTS = Array.from({ length: 12 }, (_, i) => `Trail running shoe model ${String.fromCharCode(65 + i)}, breathable mesh upper, cushioned sole, in stock`);

function facetPage(pathAndQuery: string, page: (title: string, body: string) => Buffer): Buffer {
  const params = new URLSearchParams(pathAndQuery.slice(FACETS_PATH.length + 1));
  const resultPage = Math.min(1_000_000, Math.max(1, Number(params.get('page') ?? '1') || 1));
  const nav: [string, string][] = [];
  const withParam = (name: string, value: string): string => {
    const next = new URLSearchParams(params);
    next.set(name, value);
    next.sort();
    return `${FACETS_PATH}?${next.toString()}`;
  };
  for (const [name, values] of Object.entries(FACETS)) {
    for (const value of values) if (params.get(name) !== value) nav.push([withParam(name, value), `${name}: ${value}`]);
  }
  nav.push([withParam('page', String(resultPage + 1)), 'next page']);
  nav.push(['/index.html', 'home']);
  return page('Search results', `<h1>Search results</h1><p>Twelve products match your filters.</p><ul>${PRODUCTS.map((p) => `<li>${escapeText(p)}</li>`).join('')}</ul>${anchors(nav)}`);
}

function portalPage(name: string, visit: string, page: (title: string, body: string) => Buffer): Buffer {
  const nav: [string, string][] = PORTAL_PAGES.map((target) => [`/portal/${target}.html?visit=${token(`${name}/${visit}/${target}`)}`, target]);
  nav.push(['/index.html', 'home']);
  return page('Member portal', `<h1>Member portal</h1><p>Please sign in to see your account. Your visit is being tracked for your convenience.</p>${anchors(nav)}`);
}

function storyPage(n: number, page: (title: string, body: string) => Buffer): Buffer {
  const rng = prng(`tarpit:${n}`);
  const text = [paragraph(rng), paragraph(rng), paragraph(rng)].map((p) => `<p>${escapeText(p)}</p>`).join('');
  const nav: [string, string][] = [];
  for (let k = 1; k <= 4; k++) if (4 * n + k <= LAST_STORY) nav.push([`/stories/${4 * n + k}.html`, `story ${4 * n + k}`]);
  nav.push(['/index.html', 'home']);
  return page(`Story ${n}`, `<h1>Story ${n}</h1>${text}${anchors(nav)}`);
}

function anchors(links: readonly [string, string][]): string {
  return `<ul>${links.map(([href, text]) => `<li><a href="${escapeAttribute(href)}">${escapeText(text)}</a></li>`).join('')}</ul>`;
}
