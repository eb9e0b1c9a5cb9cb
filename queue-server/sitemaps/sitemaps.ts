/**
 * Sitemaps as discovery (sitemaps.org protocol 0.9): which sitemap files of each origin are still to
 * be read in this pass, and which known URLs a sitemap's `<lastmod>` says changed since their last
 * fetch. The rules of what a sitemap may list are sitemap-rules.ts; this is the state.
 *
 *   robots.txt known ──► top sitemaps (its Sitemap: lines on the origin, /sitemap.xml) pending
 *   pending ──(the cutter takes them: a sitemap slot before the origin's pages)──► out
 *   out ──(result: an index)──► its sitemaps pending one level down (MAX_SITEMAP_NESTING)
 *   out ──(result: a urlset)──► its URLs admitted as links; changed known URLs remembered
 *   out ──(lease ran out)──► pending again
 *
 * Sitemaps are not pages: they have no crawl database record, are not counted against --max-pages
 * nor in pagesFetched, and are read once per origin per pass (a new crawl, or a queue server start,
 * reads them again). While an origin has sitemaps pending its pages wait, as they wait for robots.txt,
 * so a `<lastmod>` is known before the page it dates is judged fresh or not; at --host-concurrency
 * above 1 a page slot may go out beside a sitemap slot.
 *
 * Memory: per origin met, one map entry; while its sitemaps are being read, the sitemap URLs taken up
 * this pass (at most MAX_SITEMAPS_PER_ORIGIN), forgotten once none is pending or out; changed URLs at most MAX_CHANGED_URLS (about 60 bytes each), the rest not
 * remembered (those pages are judged by their freshness alone).
 */
import type { Validators } from '../../shared/protocol.js';
import { urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import type { RobotsRules } from '../robots/robots.js';
import { MAX_SITEMAP_NESTING, MAX_SITEMAPS_PER_ORIGIN, SITEMAPS_PER_SLOT, topSitemapsOf } from './sitemap-rules.js';

/** Known URLs remembered as changed by a sitemap's lastmod, at most. */
export const MAX_CHANGED_URLS = 100_000;

export interface PendingSitemap {
  readonly url: NormalizedUrl;
  /** 0 for a top sitemap, 1 for one listed by a sitemap index, ... */
  readonly level: number;
  /** Of its last answer, for a conditional request (sitemap-revisit.ts); absent: none. */
  readonly validators?: Validators | null;
}

class OriginSitemaps {
  /** The top sitemaps were taken up in this pass. */
  discovered = false;
  readonly pending: PendingSitemap[] = [];
  /** Sitemap URLs taken up in this pass (pending, out or read), so none is read twice. */
  readonly taken = new Set<string>();
  /** Sitemaps out on lease now. */
  out = 0;
}

/** An origin whose sitemaps were all read in this pass: nothing is kept of them but that. */
const READ: OriginSitemaps = Object.freeze(Object.assign(new OriginSitemaps(), { discovered: true })) as OriginSitemaps;

export class SitemapDiscovery {
  readonly #origins = new Map<string, OriginSitemaps>();
  readonly #changed = new Map<string, number>();

  /**
   * The sitemaps of the origin to read now, at most SITEMAPS_PER_SLOT, removed from pending; the top
   * ones are taken up the first time the origin's robots.txt is known in this pass. `allowed` is
   * robots.txt's verdict: a sitemap it disallows is not fetched.
   */
  take(origin: string, rules: RobotsRules | null, allowed: (url: NormalizedUrl) => boolean): PendingSitemap[] {
    const state = this.#stateOf(origin);
    if (!state.discovered) {
      state.discovered = true;
      for (const url of topSitemapsOf(origin, rules)) this.#add(state, { url, level: 0 });
    }
    const out: PendingSitemap[] = [];
    while (out.length < SITEMAPS_PER_SLOT && state.pending.length > 0) {
      const next = state.pending.shift()!;
      if (allowed(next.url)) out.push(next);
    }
    if (out.length > 0) state.out += out.length;
    this.#settle(origin, state);
    return out;
  }

  /** A sitemap's result arrived (after `listed` took up what an index names). */
  read(origin: string): void {
    const state = this.#origins.get(origin);
    if (state === undefined || state === READ) return;
    state.out = Math.max(0, state.out - 1);
    this.#settle(origin, state);
  }

  /**
   * The origin's robots.txt was fetched again (its rules had expired: a day later in a continuous
   * crawl): its sitemaps are read again once nothing of the last reading is pending or out.
   */
  renew(origin: string): void {
    const state = this.#origins.get(origin);
    if (state === READ) this.#origins.delete(origin);
  }

  /**
   * A sitemap index of the origin listed `url` (already checked by sitemap-rules.ts `listedUrl`): it is
   * read in this pass, unless it is too deep or the origin's sitemaps are spent. Returns whether it was taken up.
   */
  listed(origin: string, url: NormalizedUrl, level: number): boolean {
    if (level > MAX_SITEMAP_NESTING) return false;
    return this.#add(this.#origins.get(origin) ?? READ, { url, level });
  }

  /** A sitemap's lease ran out before its result: it is read later. */
  lost(origin: string, sitemap: PendingSitemap): void {
    const state = this.#origins.get(origin);
    if (state === undefined || state === READ) return;
    state.out = Math.max(0, state.out - 1);
    state.pending.unshift(sitemap);
  }

  /** A known URL whose lastmod is newer than its last fetch: fetched even while its stored copy is fresh. */
  changed(hash: UrlHash, lastmod: number): void {
    const key = urlHashHex(hash);
    if (this.#changed.size < MAX_CHANGED_URLS || this.#changed.has(key)) this.#changed.set(key, lastmod);
  }

  /** Whether a sitemap said the URL changed after it was last fetched; the mark is kept until `fetched`. */
  isChanged(hash: UrlHash): boolean {
    return this.#changed.has(urlHashHex(hash));
  }

  /** The URL was requested again: its mark is spent. */
  fetched(hash: UrlHash): void {
    this.#changed.delete(urlHashHex(hash));
  }

  /** A new pass or a new crawl: every origin's sitemaps are read again. */
  clear(): void {
    this.#origins.clear();
    this.#changed.clear();
  }

  #stateOf(origin: string): OriginSitemaps {
    let state = this.#origins.get(origin);
    if (state === undefined) {
      state = new OriginSitemaps();
      this.#origins.set(origin, state);
    }
    return state;
  }

  /** Forgets the sitemap URLs of an origin once none is pending or out. */
  #settle(origin: string, state: OriginSitemaps): void {
    if (state !== READ && state.discovered && state.pending.length === 0 && state.out === 0) this.#origins.set(origin, READ);
  }

  #add(state: OriginSitemaps, sitemap: PendingSitemap): boolean {
    if (state === READ || state.taken.has(sitemap.url) || state.taken.size >= MAX_SITEMAPS_PER_ORIGIN) return false;
    state.taken.add(sitemap.url);
    state.pending.push(sitemap);
    return true;
  }
}
