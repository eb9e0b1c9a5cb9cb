/**
 * Live progress for `petrel crawl`: follows the queue server's status stream (server-sent events)
 * and keeps one line on the terminal up to date (without a terminal, prints a line every 5 s): the
 * counters, and an estimate of the time the queued URLs take with the option that would shorten it.
 * Things worth a line of their own (a host whose robots.txt cannot be fetched, and what happens to
 * its URLs) are printed as they happen, once each. The stream is asked for with a signed request
 * (fetcher/queue-client.ts, keyed by fetcher.token), so the secret never crosses the wire, as for
 * the fetchers.
 */
import { QueueClient } from '../fetcher/queue-client.js';
import type { CrawlStatus } from '../queue-server/crawl/crawl-status.js';
import type { RobotsTrouble } from '../queue-server/crawl/recent-events.js';
import type { HostHealth } from '../queue-server/frontier/host-backoff.js';
import type { TimeLeft } from '../queue-server/crawl/time-left.js';
import { formatApproxDuration, formatDuration } from '../shared/duration.js';

type ProgressStatus = Pick<CrawlStatus, 'elapsedMs' | 'pagesFetched' | 'pagesPerSecond' | 'notModified' | 'errors' | 'robotsDenied' | 'frontierSize' | 'itemsLeased' | 'fetchers' | 'urlsDiscovered'> & {
  timeLeft?: TimeLeft | null;
  config?: { delayMs: number; hostConcurrency: number };
  /** Set while group commits fail (crawl-service.ts): the crawl is paused, and no time left is shown. */
  storageError?: { code: string; attempts: number } | null;
  /** URLs waiting for their time: a retry's backoff, a Retry-After, a host backed off (crawl-status.ts). */
  waitingUrls?: number;
};

/** Past this estimate the line says which option would shorten it. */
const HINT_AFTER_MS = 60_000;

/** The sender id progress signs as (the queue server records no fetcher for a status request). */
const PROGRESS_ID = 'petrel-crawl-progress';

export function formatProgress(status: ProgressStatus): string {
  const seconds = (status.elapsedMs / 1000).toFixed(1);
  return (
    `[${seconds}s] fetched ${status.pagesFetched} (${status.pagesPerSecond}/s), 304 ${status.notModified}, ` +
    `errors ${status.errors}, robots-denied ${status.robotsDenied}, discovered ${status.urlsDiscovered}, ` +
    `queued ${status.frontierSize}, leased ${status.itemsLeased}, ` +
    // A one-shot crawl waits for its retries before it ends: said, so a line that stops moving has a reason.
    ((status.waitingUrls ?? 0) > 0 ? `waiting ${status.waitingUrls} (retries, Retry-After, hosts backed off), ` : '') +
    `fetchers ${status.fetchers.length}` +
    (status.storageError == null
      ? formatTimeLeft(status.timeLeft ?? null, status.config)
      : `, paused: the queue server cannot store results (${status.storageError.code}, attempt ${status.storageError.attempts}); it goes on by itself once it can`)
  );
}

/** `, ~19min left for the queued URLs (1s between requests to a host: --delay-ms or --host-concurrency shortens it)`. */
export function formatTimeLeft(timeLeft: TimeLeft | null, config: { delayMs: number; hostConcurrency: number } | undefined): string {
  if (timeLeft === null || timeLeft.ms < 1000) return '';
  const estimate = `, ~${formatApproxDuration(timeLeft.ms)} left for the queued URLs`;
  if (timeLeft.ms < HINT_AFTER_MS) return estimate;
  const host = hostOf(timeLeft.origin);
  switch (timeLeft.limitedBy) {
    case 'delay':
      return `${estimate} (${formatDuration(config?.delayMs ?? 0)} between requests to ${host}: --delay-ms or --host-concurrency shortens it)`;
    case 'crawl-delay':
      return `${estimate} (the robots.txt of ${host} asks for a Crawl-delay, which Petrel keeps)`;
    case 'responses':
      return `${estimate} (${host} answers slowly: --host-concurrency shortens it, if the host can take it)`;
  }
}

/** One line per robots.txt trouble: `robots.txt of http://h:1 unreachable (connection-refused), retry 2 of 3 in 60s`. */
export function formatRobotsTrouble(trouble: Omit<RobotsTrouble, 'earlier'>, serverNow: number): string {
  const head = `robots.txt of ${trouble.origin} unreachable (${trouble.code})`;
  if (trouble.retryAt === null) {
    return `${head} ${trouble.attempt} time${trouble.attempt === 1 ? '' : 's'} in a row: its URLs are given up as robots-unreachable (errors); --robots-attempts and --robots-retry-ms set how hard it is tried`;
  }
  return `${head}, retry ${trouble.attempt + 1} of ${trouble.attempts} in ${formatApproxDuration(Math.max(0, trouble.retryAt - serverNow))}; its URLs wait for it`;
}

/**
 * The lines for the robots.txt attempts in `troubles` (a status's robotsTrouble, newest host first)
 * that are not in `told` yet, oldest first, each added to `told`: every attempt is told once, also
 * those that a status seen late only lists as `earlier` (said with the wait they had: `in 300ms`).
 */
export function robotsTroubleLines(troubles: readonly RobotsTrouble[], told: Set<string>, serverNow: number): string[] {
  const lines: string[] = [];
  const tell = (trouble: Omit<RobotsTrouble, 'earlier'>, now: number) => {
    const key = `${trouble.origin} ${trouble.attempt} ${trouble.retryAt === null}`;
    if (told.has(key)) return;
    told.add(key);
    lines.push(formatRobotsTrouble(trouble, now));
  };
  for (const trouble of [...troubles].reverse()) {
    for (const earlier of trouble.earlier) tell({ ...trouble, ...earlier }, earlier.at);
    tell(trouble, serverNow);
  }
  return lines;
}

export function formatBackedOffHost(host: HostHealth, serverNow: number): string {
  if (host.waitAskedMs != null) return `${host.origin} asked to wait ${formatApproxDuration(host.waitAskedMs)} (${host.code} with Retry-After), longer than a one-shot crawl waits: given up for this pass, its remaining URLs are recorded host-failing (errors)`;
  const head = `${host.origin} keeps failing (${host.code}, ${host.failuresInRow} requests in a row)`;
  if (host.gaveUp) return `${head}: given up for this pass, its remaining URLs are recorded host-failing (errors)`;
  return `${head}: backed off, asked again in ${formatApproxDuration(Math.max(0, (host.until ?? serverNow) - serverNow))}`;
}

function hostOf(origin: string): string {
  try {
    return new URL(origin).host;
  } catch {
    return origin;
  }
}

export interface Progress {
  /** Ends the stream (and the line, on a terminal). */
  stop(): void;
  /**
   * Resolves once progress has shown a status of the crawl at its end (a one-shot crawl's `idle`: no
   * robots.txt attempt or URL left, so every line it has to say is said), once the stream is over, or
   * after `timeoutMs` (a stream that never opens must not hold up the end of the crawl).
   */
  shownEnd(timeoutMs: number): Promise<void>;
}

export function followProgress(serverUrl: string, token: string, out: NodeJS.WriteStream): Progress {
  const controller = new AbortController();
  let endShown = false;
  const endWaiters: (() => void)[] = [];
  const onEndShown = () => {
    endShown = true;
    for (const wake of endWaiters.splice(0)) wake();
  };
  const tty = out.isTTY === true;
  let lastPrinted = 0;
  let latest: string | null = null;
  const show = (line: string) => {
    latest = line;
    const now = Date.now();
    if (tty) out.write(`\r\x1b[K${line}`);
    else if (now - lastPrinted >= 5000) {
      lastPrinted = now;
      out.write(`${line}\n`);
    }
  };
  /** A line of its own, above the progress line. */
  const say = (line: string) => {
    if (tty) out.write(`\r\x1b[K${line}\n${latest ?? ''}`);
    else out.write(`${line}\n`);
  };
  // Each robots.txt attempt of each host is told once.
  const told = new Set<string>();
  const onStatus = (status: CrawlStatus) => {
    const serverNow = Date.now();
    for (const line of robotsTroubleLines(status.robotsTrouble ?? [], told, serverNow)) say(`petrel crawl: ${line}`);
    for (const host of [...(status.backedOffHosts ?? [])].reverse()) {
      // Said once when a host is backed off, once more if it is given up.
      const key = `backoff ${host.origin} ${host.since} ${host.gaveUp}`;
      if (told.has(key)) continue;
      told.add(key);
      say(`petrel crawl: ${formatBackedOffHost(host, serverNow)}`);
    }
    show(formatProgress(status));
    if (status.state === 'idle') onEndShown();
  };
  void (async () => {
    // The client retries until the stream begins (a queue server still starting); the stream then
    // ends when the queue server exits. Progress is best effort.
    const client = new QueueClient({ serverUrl, token, signal: controller.signal, connections: 1 });
    try {
      let buffer = '';
      for await (const chunk of await client.openStatusStream(PROGRESS_ID)) {
        buffer += chunk.toString();
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event);
          if (event.startsWith('event: status') && data !== null) onStatus(JSON.parse(data[1]!) as CrawlStatus);
        }
      }
    } catch {
      // Stopped, or the queue server went away.
    } finally {
      onEndShown();
      await client.close().catch(() => undefined);
    }
  })();
  return {
    stop: () => {
      controller.abort();
      if (tty && latest !== null) out.write('\n');
    },
    shownEnd: (timeoutMs) =>
      endShown
        ? Promise.resolve()
        : new Promise((resolve) => {
            const timer = setTimeout(resolve, timeoutMs);
            endWaiters.push(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
  };
}
