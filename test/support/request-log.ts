/** Reading the test web's request log: what the web servers saw, the ground truth for crawl tests. */
import type { RequestLogEntry } from '../../scripts/test-web.js';

export function urlOf(entry: RequestLogEntry): string {
  return `http://${entry.host}${entry.path}`;
}

/** Requests of pages: not robots.txt, not /sitemap.xml (discovery; the test web's normal hosts have none). */
export function pageRequests(log: readonly RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((entry) => entry.path !== '/robots.txt' && entry.path !== '/sitemap.xml');
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

export interface PolitenessViolation {
  host: string;
  kind: 'overlap' | 'gap';
  detail: string;
}

/**
 * Checks, per host, that requests never overlapped (host concurrency 1) and that the gap between the
 * end of one response and the start of the next request was at least `gapMs(host)`.
 */
export function politenessViolations(log: readonly RequestLogEntry[], gapMs: (host: string) => number): PolitenessViolation[] {
  const violations: PolitenessViolation[] = [];
  const byHost = new Map<string, RequestLogEntry[]>();
  for (const entry of log) byHost.set(entry.host, [...(byHost.get(entry.host) ?? []), entry]);
  for (const [host, entries] of byHost) {
    const sorted = [...entries].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const previous = sorted[i - 1]!;
      const current = sorted[i]!;
      // From when the previous response was handed to the socket: the 'finish' stamp (`end`) can lag
      // behind by as long as the test's own event loop was busy, which shortens gaps that were not short.
      if (current.start < previous.handedOver) {
        violations.push({ host, kind: 'overlap', detail: `${previous.path} [${previous.start.toFixed(1)}, ${previous.handedOver.toFixed(1)}] overlaps ${current.path} at ${current.start.toFixed(1)}` });
      } else if (current.start - previous.handedOver < gapMs(host)) {
        violations.push({ host, kind: 'gap', detail: `${current.path} started ${(current.start - previous.handedOver).toFixed(1)} ms after ${previous.path} was answered` });
      }
    }
  }
  return violations;
}

/** The most requests one host had in flight at the same instant. */
export function peakConcurrency(log: readonly RequestLogEntry[], host: string): number {
  const events: [number, number][] = [];
  for (const entry of log) if (entry.host === host) events.push([entry.start, 1], [entry.end, -1]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let current = 0;
  let peak = 0;
  for (const [, delta] of events) {
    current += delta;
    peak = Math.max(peak, current);
  }
  return peak;
}
