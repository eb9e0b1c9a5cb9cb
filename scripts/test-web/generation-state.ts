/**
 * The web's current generation and the failure counters of its flaky pages: the only state that
 * decides what a URL serves. Owned by one TestWeb; `setGeneration()` writes it, the server reads it once
 * per request (so a switch takes effect for the next request) and counts failures.
 */
import { errorPage } from './pages.js';
import type { Resource } from './resource.js';
import type { WebHost } from './web.js';

export class GenerationState {
  #current = 0;
  /** 500s served so far in this generation, by canonical URL. */
  #failuresServed = new Map<string, number>();

  get current(): number {
    return this.#current;
  }

  /** Switches generation and restarts every flaky page's failure count, even when `generation` is the current one. */
  set(generation: number): void {
    if (!Number.isSafeInteger(generation) || generation < 0) throw new RangeError(`generation must be a non-negative integer, got ${String(generation)}`);
    this.#current = generation;
    this.#failuresServed.clear();
  }

  /**
   * What one request to `url` (canonical, on `host`) gets now: a 500 while the page has failures left
   * in this generation (each such request, GET or HEAD, conditional or not, uses one up), else what the
   * site serves in the current generation.
   */
  resolveRequest(host: WebHost, url: string): Resource {
    const pathAndQuery = url.slice(host.origin.length);
    const failures = host.site.flakyFailures?.(pathAndQuery, this.#current) ?? 0;
    const served = this.#failuresServed.get(url) ?? 0;
    if (served < failures) {
      this.#failuresServed.set(url, served + 1);
      return errorPage(url, 500);
    }
    return host.site.resolve(pathAndQuery, this.#current);
  }
}
