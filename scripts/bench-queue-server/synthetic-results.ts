/**
 * What the synthetic fleet answers for an item of a schedule, without any web: robots.txt is 404,
 * a page of the graph model is a 200 with the model's links, a title, an excerpt, a signature and a
 * simhash that are the page's own (so no two pages look like duplicates, and no URL shape looks like
 * an infinite space to admission/url-shape.ts: excerpts are drawn from a pool of distinct texts of
 * made-up words, far apart by simhash). A URL that is not the model's gets a 404.
 *
 * Cheap by construction, since the fleet shares the two cores with the queue server: link strings are
 * the model's origin plus a path string made once; excerpts come from a pool built once.
 */
import type { ItemResult, Schedule } from '../../shared/protocol.js';
import { mulberry32 } from '../test-web/prng.js';
import { mix32, type GraphModel } from './graph-model.js';

const EXCERPTS = 4096;
const EXCERPT_WORDS = 70;
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** The results of a schedule's items, and the model ids of the pages among them with their links. */
export interface ScheduleResults {
  results: ItemResult[];
  /** For results[k]: the model id of its page, or -1 (robots.txt, a URL not of the model). */
  pageIds: Int32Array;
}

export class SyntheticResults {
  readonly #model: GraphModel;
  readonly #excerpts: string[];
  readonly #links: Int32Array;

  constructor(model: GraphModel) {
    this.#model = model;
    this.#links = new Int32Array(model.options.links);
    const random = mulberry32(model.options.seed ^ 0xe8ce);
    const words = Array.from({ length: 5000 }, () => {
      let word = '';
      for (let k = 3 + Math.floor(random() * 7); k > 0; k--) word += LETTERS[Math.floor(random() * LETTERS.length)];
      return word;
    });
    this.#excerpts = Array.from({ length: EXCERPTS }, () => Array.from({ length: EXCERPT_WORDS }, () => words[Math.floor(random() * words.length)]).join(' '));
  }

  /** The results of every item of the schedule, in slot and item order. */
  resultsOf(schedule: Schedule, fetchedAt: number): ScheduleResults {
    let count = 0;
    for (const slot of schedule.slots) count += slot.items.length;
    const results: ItemResult[] = new Array(count);
    const pageIds = new Int32Array(count).fill(-1);
    const date = new Date(fetchedAt).toUTCString();
    let at = 0;
    for (const slot of schedule.slots) {
      for (const item of slot.items) {
        const id = item.kind === 'robots' ? null : this.#model.idOf(item.url);
        if (id === null) results[at] = notFound(slot.slot, item.i, item.url, fetchedAt, date);
        else {
          results[at] = this.#page(slot.slot, item.i, item.url, id, fetchedAt, date);
          pageIds[at] = id;
        }
        at++;
      }
    }
    return { results, pageIds };
  }

  #page(slot: number, i: number, url: string, id: number, fetchedAt: number, date: string): ItemResult {
    const n = this.#model.linksOf(id, this.#links);
    const links: string[] = new Array(n);
    for (let k = 0; k < n; k++) links[k] = this.#model.url(this.#links[k]!);
    const title = `Page ${id} of the scale benchmark`;
    return {
      slot,
      i,
      url,
      fetchedAt,
      durationMs: 3,
      error: null,
      truncated: false,
      redirectTo: null,
      retryAfterMs: null,
      status: 200,
      contentType: 'text/html; charset=utf-8',
      bytes: 14_000,
      wireBytes: 14_000,
      signature: hex16(id, 0x5167),
      cache: { etag: `"${hex16(id, 0xe7a9)}"`, lastModified: date, date, age: null, expires: null, cacheControl: 'max-age=3600' },
      robotsTxt: null,
      index: null,
      page: {
        title,
        description: 'A page of the queue server scale benchmark.',
        language: 'en',
        excerpt: this.#excerpts[mix32(id ^ 0x3c6e) % EXCERPTS]!,
        canonical: null,
        noindex: false,
        nofollow: false,
        outlinks: n,
        simhash: hex16(id, 0x51a5),
      },
      links,
    };
  }
}

function notFound(slot: number, i: number, url: string, fetchedAt: number, date: string): ItemResult {
  return {
    slot,
    i,
    url,
    fetchedAt,
    durationMs: 1,
    error: null,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    status: 404,
    contentType: 'text/html',
    bytes: 150,
    wireBytes: 150,
    signature: null,
    cache: { etag: null, lastModified: null, date, age: null, expires: null, cacheControl: null },
    robotsTxt: null,
    index: null,
    page: null,
    links: [],
  };
}

/** 16 hex digits made from an id and a salt: a page's own signature, simhash or etag. */
function hex16(id: number, salt: number): string {
  return mix32(id ^ salt).toString(16).padStart(8, '0') + mix32(id + salt * 7).toString(16).padStart(8, '0');
}
