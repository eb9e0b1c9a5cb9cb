/**
 * The queue server's operations events, logged from what the crawl service reports (no change to the
 * crawl itself): `commit` (debug: duration, outcome), `fetcher-joined` (a fetcher id's first claim),
 * `fetcher-lost` (a fetcher silent for two lease times, as the schedule cutter counts the living),
 * `lease-expired` (leases that ran out since the last look), `robots-unreachable` (a host's robots.txt
 * could not be fetched: attempt n of m). The last three are found by comparing the status every
 * WATCH_MS (or a lease time, if shorter), on an unref'd timer.
 */
import type { Logger } from '../../shared/logger.js';
import type { CrawlService } from '../crawl/crawl-service.js';

const WATCH_MS = 5000;
/** Fetcher ids remembered as joined (as the registry: at most 10,000). */
const MAX_KNOWN = 10_000;

export function logCrawlEvents(service: CrawlService, logger: Logger, clock: () => number): () => void {
  const joined = new Set<string>();
  const alive = new Map<string, string>();
  const onClaim = ({ fetcherId, name }: { fetcherId: string; name: string }) => {
    if (joined.has(fetcherId)) return;
    if (joined.size >= MAX_KNOWN) joined.clear();
    joined.add(fetcherId);
    alive.set(fetcherId, name);
    logger.info({ event: 'fetcher-joined', fetcherId, fetcherName: name }, `fetcher ${name} joined`);
  };
  const onCommit = ({ durationMs, ok }: { durationMs: number; ok: boolean }) => logger.debug({ event: 'commit', ms: Math.round(durationMs * 100) / 100, ok }, ok ? 'group commit' : 'group commit failed');
  service.on('claim', onClaim);
  service.on('commit', onCommit);

  let leasesExpired = service.summary().leasesExpired;
  const robotsSeen = new Map<string, number>();
  const look = () => {
    const status = service.status();
    const now = clock();
    if (status.leasesExpired > leasesExpired) {
      logger.warn({ event: 'lease-expired', count: status.leasesExpired - leasesExpired, total: status.leasesExpired }, `${status.leasesExpired - leasesExpired} lease(s) ran out: their URLs go back to the frontier`);
    }
    leasesExpired = status.leasesExpired;
    const living = new Set<string>();
    for (const fetcher of status.fetchers) {
      if (now - fetcher.lastSeen < status.config.leaseMs * 2) {
        living.add(fetcher.id);
        alive.set(fetcher.id, fetcher.name);
      }
    }
    for (const [id, name] of alive) {
      if (living.has(id)) continue;
      alive.delete(id);
      logger.warn({ event: 'fetcher-lost', fetcherId: id, fetcherName: name }, `fetcher ${name} not heard from for two lease times`);
    }
    for (const trouble of [...status.robotsTrouble].reverse()) {
      const { origin, attempts } = trouble;
      const seen = robotsSeen.get(origin) ?? 0;
      if (seen === trouble.attempt) continue;
      robotsSeen.set(origin, trouble.attempt);
      // Attempts made between two looks are in `earlier`: each is logged, oldest first (a lower attempt than seen is a new run of failures).
      const since = trouble.attempt < seen ? 0 : seen;
      for (const { code, attempt, retryAt } of [...trouble.earlier.filter((earlier) => earlier.attempt > since), trouble]) {
        logger.warn({ event: 'robots-unreachable', origin, code, attempt, attempts, givenUp: retryAt === null }, `robots.txt of ${origin} unreachable (${code}), attempt ${attempt} of ${attempts}`);
      }
    }
    if (robotsSeen.size > 1000) robotsSeen.clear();
  };
  const timer = setInterval(look, Math.min(WATCH_MS, Math.max(100, service.config.leaseMs)));
  timer.unref();
  return () => {
    clearInterval(timer);
    service.off('claim', onClaim);
    service.off('commit', onCommit);
  };
}
