/**
 * A fetcher that works for several queue servers: one claim loop (a `Fetcher`) per server, all
 * sharing the process's --concurrency as one budget (slot-budget.ts, handed to each by `makeFetcher`):
 * at most --concurrency origins at once across all servers, shared max-min fairly, so a busy server
 * cannot starve a quiet one, and a server that has no work costs one parked long-poll claim holding
 * one unit. The servers are a fixed list (`--server`, repeatable) or come from Redis
 * (`--cluster`, cluster-directory.ts), looked up when the cluster's events channel says a member
 * joined or left (`lookUpNow`, queue-server/cluster/cluster-events.ts) and every `pollMs` as the
 * fallback (a member killed says nothing; its lease runs out): a new server is served from its
 * first appearance; one gone from the directory is abandoned (`abort`: the results it was owed
 * go back with its leases) — a dead queue server costs only the schedules held for it.
 *
 * With a fixed list the pool ends when every loop has (each queue server said `done`); with a
 * directory it runs until stopped.
 */
import type { FetcherEnd } from './fetcher.js';

export interface PooledFetcher {
  run(): Promise<FetcherEnd>;
  stop(): void;
  abort(): void;
}

export interface ServerPoolOptions {
  /** A fixed list of servers; or `discover`. */
  readonly servers?: readonly string[];
  readonly discover?: () => Promise<string[]>;
  /** Fallback look-up interval, ms (default DIRECTORY_POLL_MS). */
  readonly pollMs?: number;
  readonly makeFetcher: (serverUrl: string) => PooledFetcher;
  readonly log: (message: string) => void;
}

/** A server missing from this many look-ups in a row is given up (one miss may be a card renewed late). */
const MISSES_TO_DROP = 2;
/** With the events channel saying when members come and go, the directory is polled only this often. */
export const DIRECTORY_POLL_MS = 10_000;

export class ServerPool {
  readonly #options: ServerPoolOptions;
  readonly #running = new Map<string, { fetcher: PooledFetcher; ended: Promise<FetcherEnd>; misses: number }>();
  #stopped = false;
  #wake: (() => void) | null = null;
  #gaveUp = false;
  #lookUpAgain = false;

  constructor(options: ServerPoolOptions) {
    this.#options = options;
  }

  /** Server URLs being served now. */
  get servers(): string[] {
    return [...this.#running.keys()];
  }

  async run(): Promise<FetcherEnd> {
    const { discover } = this.#options;
    if (discover === undefined) {
      for (const url of this.#options.servers ?? []) this.#serve(url);
      const ends = await Promise.all([...this.#running.values()].map((entry) => entry.ended));
      if (ends.includes('gave-up')) return 'gave-up';
      return ends.every((end) => end === 'done') ? 'done' : 'stopped';
    }
    const pollMs = this.#options.pollMs ?? DIRECTORY_POLL_MS;
    /** Said once each time the cluster has no queue server to serve (a fetcher started first, or every member gone). */
    let saidNone = false;
    while (!this.#stopped) {
      try {
        const live = new Set(await discover());
        if (live.size === 0 && this.#running.size === 0 && !saidNone) {
          saidNone = true;
          this.#options.log('no queue server in the cluster yet: waiting for one to join');
        } else if (live.size > 0) saidNone = false;
        for (const url of live) if (!this.#running.has(url)) this.#serve(url);
        for (const [url, entry] of this.#running) {
          if (live.has(url)) entry.misses = 0;
          else if (++entry.misses >= MISSES_TO_DROP) {
            this.#options.log(`queue server ${url} left the cluster: abandoning its schedules`);
            entry.fetcher.abort();
            this.#running.delete(url);
          }
        }
      } catch (error) {
        this.#options.log(`cannot read the cluster's queue servers from Redis: ${(error as Error).message.slice(0, 200)}; serving the ones known`);
      }
      if (this.#lookUpAgain) {
        this.#lookUpAgain = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
    await Promise.allSettled([...this.#running.values()].map((entry) => entry.ended));
    return this.#gaveUp ? 'gave-up' : 'stopped';
  }

  #serve(url: string): void {
    // A fixed list is what the command line said; servers found in Redis are news.
    if (this.#options.discover !== undefined) this.#options.log(`serving the queue server at ${url}`);
    const fetcher = this.#options.makeFetcher(url);
    const ended = fetcher.run().then((end) => {
      if (end === 'gave-up') this.#gaveUp = true;
      // A server that finished (`done`) is looked up again: in a cluster it may come back with work.
      if (this.#running.get(url)?.fetcher === fetcher && this.#options.discover !== undefined) this.#running.delete(url);
      return end;
    });
    this.#running.set(url, { fetcher, ended, misses: 0 });
  }

  /** Looks the servers up now instead of at the next poll (a member joined or left). */
  lookUpNow(): void {
    // Said while a look-up is on its way: one more right after it (what it read may be older than the news).
    if (this.#wake !== null) this.#wake();
    else this.#lookUpAgain = true;
  }

  stop(): void {
    this.#stopped = true;
    for (const entry of this.#running.values()) entry.fetcher.stop();
    this.#wake?.();
  }

  abort(): void {
    this.#stopped = true;
    for (const entry of this.#running.values()) entry.fetcher.abort();
    this.#wake?.();
  }
}
