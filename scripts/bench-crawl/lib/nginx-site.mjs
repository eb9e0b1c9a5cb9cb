/**
 * A real corpus as the benchmark sees it: nginx serving the package's directory on the corpus's loopback
 * address, and the tally of what it answered, read from its access log, in the same shape as the test
 * web's tally (web.mjs) so both feed the same table.
 *
 * Pages are counted from the log, never from a crawler: GETs answered 200 (robots.txt apart), their
 * distinct URLs in pageKey() spelling, duplicates, and the reachable pages (lib/link-walk.mjs) that were
 * never answered 200. For a revalidation pass the 304s are counted the same way.
 *
 * Memory: the entries since the last tally (one small object per request; ~22,000 for rust-doc).
 */
import { pageKey } from './link-walk.mjs';
import { parseAccessLine, startNginx } from './nginx.mjs';

/**
 * @param {{ corpus: { name: string, root: string, ip: string }, reachable: Set<string>, dir: string,
 *           expiresS: number, gzip?: boolean }} options
 */
export async function startNginxSite({ corpus, reachable, dir, expiresS, gzip = false }) {
  const nginx = await startNginx({ root: corpus.root, ip: corpus.ip, dir, expiresS, gzip });
  let entries = [];
  let cpuAtLastTally = nginx.cpuS();
  let pages200 = 0;
  const poll = () => {
    for (const line of nginx.readNewLines()) {
      const entry = parseAccessLine(line);
      if (entry === null) continue;
      entries.push(entry);
      if (entry.status === 200 && entry.method === 'GET' && entry.uri !== '/robots.txt') pages200++;
    }
  };
  return {
    kind: 'nginx',
    port: nginx.port,
    origins: [nginx.origin],
    seeds: [`${nginx.origin}/index.html`],
    expected: reachable.size,
    nginxPid: nginx.pid,
    accessLog: nginx.accessLog,
    /** Page 200s since the last tally (for --max: wget has no page limit of its own). */
    pagesSoFar() {
      poll();
      return pages200;
    },
    async tally() {
      // nginx writes a line when a response ends; the crawler has exited, so every line is there.
      poll();
      const result = tallyEntries(entries, reachable);
      const cpu = nginx.cpuS();
      result.serverCpuS = cpu - cpuAtLastTally;
      cpuAtLastTally = cpu;
      entries = [];
      pages200 = 0;
      return result;
    },
    async close() {
      await nginx.stop();
    },
  };
}

/** What the server answered: the test web's tally fields, plus 304s for revalidation passes. */
export function tallyEntries(entries, reachable) {
  const statuses = {};
  let robots = 0;
  let page200 = 0;
  let notModified = 0;
  let bytes = 0;
  /** pageKey → raw URIs answered 200 under it. */
  const distinct = new Map();
  /** pageKey → answered 304 (at least once). */
  const distinct304 = new Set();
  let firstStart = Infinity;
  let lastEnd = -Infinity;
  for (const entry of entries) {
    firstStart = Math.min(firstStart, entry.startMs);
    lastEnd = Math.max(lastEnd, entry.endMs);
    statuses[entry.status] = (statuses[entry.status] ?? 0) + 1;
    bytes += entry.bytes;
    if (entry.uri === '/robots.txt') {
      robots++;
      continue;
    }
    if (entry.method !== 'GET') continue;
    const key = pageKey(entry.uri);
    if (entry.status === 304) {
      notModified++;
      distinct304.add(key);
    }
    if (entry.status !== 200) continue;
    page200++;
    const raws = distinct.get(key);
    if (raws === undefined) distinct.set(key, [entry.uri]);
    else raws.push(entry.uri);
  }
  let missing = 0;
  let missingAnswered = 0;
  const missingExamples = [];
  for (const key of reachable) {
    if (!distinct.has(key)) {
      missing++;
      if (missingExamples.length < 5) missingExamples.push(key);
    }
    if (!distinct.has(key) && !distinct304.has(key)) missingAnswered++;
  }
  let unexpected = 0;
  const unexpectedExamples = [];
  for (const key of distinct.keys()) {
    if (reachable.has(key)) continue;
    unexpected++;
    if (unexpectedExamples.length < 5) unexpectedExamples.push(key);
  }
  const duplicateExamples = [];
  for (const [url, raws] of distinct) {
    if (raws.length > 1 && duplicateExamples.length < 5) duplicateExamples.push({ url, requestedAs: raws });
  }
  const answered = new Set([...distinct.keys(), ...distinct304]);
  return {
    requests: entries.length,
    robotsRequests: robots,
    statuses,
    page200,
    distinctPages: distinct.size,
    missing,
    missingExamples,
    unexpected,
    unexpectedExamples,
    bytes,
    duplicateExamples,
    /** 304 answers (revalidation), distinct URLs among them, and URLs answered 200 or 304. */
    notModified,
    distinctNotModified: distinct304.size,
    distinctAnswered: answered.size,
    /** Reachable pages answered neither 200 nor 304. */
    missingAnswered,
    firstRequestAtMs: entries.length === 0 ? null : firstStart,
    lastResponseAtMs: entries.length === 0 ? null : lastEnd,
    serverCpuS: 0,
  };
}
