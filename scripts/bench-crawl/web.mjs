/**
 * The test web for the benchmark, as its own process (so its CPU is never charged to a crawler and the
 * crawlers see a real server over loopback). It is the compiled test web from `dist/` plus an IPC channel
 * that the CLI does not have: the benchmark asks, after each crawler, what the server actually answered,
 * so every crawler's own page count is cross-checked against the server's request log.
 *
 * Started by lib/test-web-site.mjs with fork(); not meant to be run by hand.
 *   argv: <compiled test web module> <pagesPerHost> <hosts>
 * The module's path comes from lib/petrel-build.mjs (tsconfig.build.json's outDir, or the test-web script).
 *   → { type: 'ready', port, origins, seeds, expected }       once listening
 *   ← { type: 'tally' }  → { type: 'tally', ... }              counts since the last tally, then clears the log
 *   ← { type: 'close' }                                        closes and exits
 *
 * Memory: the request log holds one entry per request until the next tally (about 10,000 per crawler at
 * the default size: a few MB).
 */
import { pathToFileURL } from 'node:url';

const [testWebModule, pagesPerHostText, hostsText] = process.argv.slice(2);
const { startTestWeb, canonicalUrl } = await import(pathToFileURL(testWebModule).href);
const [pagesPerHost, hosts] = [pagesPerHostText, hostsText].map(Number);
const web = await startTestWeb({ profile: 'bench', pagesPerHost, hosts, port: 0 });
// Every origin's index is a seed (the CLI's `seeds` holds only the main host's).
const seeds = web.origins.map((origin) => `${origin}/index.html`);
const expected = new Set(web.model.reachable({ seeds, inScope: () => true, maxDepth: Number.MAX_SAFE_INTEGER }).keys());
let cpuAtLastTally = process.cpuUsage();

process.send({ type: 'ready', port: web.port, origins: web.origins, seeds, expected: expected.size });

process.on('message', (message) => {
  if (message?.type === 'tally') {
    process.send({ type: 'tally', ...tally() });
    web.clearLog();
  } else if (message?.type === 'close') {
    void web.close().then(() => process.exit(0));
  }
});

/** What the server answered since the last tally, from its request log. */
function tally() {
  const statuses = {};
  let robots = 0;
  let page200 = 0;
  let bytes = 0;
  /** canonical URL → raw paths it was requested as, to show what a crawler fetched twice. */
  const distinct = new Map();
  let firstStart = Infinity;
  let lastEnd = -Infinity;
  for (const entry of web.log) {
    firstStart = Math.min(firstStart, entry.start);
    lastEnd = Math.max(lastEnd, entry.end);
    statuses[entry.status] = (statuses[entry.status] ?? 0) + 1;
    bytes += entry.bytes;
    if (entry.path === '/robots.txt') {
      robots++;
      continue;
    }
    if (entry.method !== 'GET' || entry.status !== 200) continue;
    page200++;
    const url = canonicalUrl(`http://${entry.host}${entry.path}`);
    if (url === null) continue;
    const raws = distinct.get(url);
    if (raws === undefined) distinct.set(url, [entry.path]);
    else raws.push(entry.path);
  }
  let missing = 0;
  for (const url of expected) if (!distinct.has(url)) missing++;
  let unexpected = 0;
  const unexpectedExamples = [];
  for (const url of distinct.keys()) {
    if (expected.has(url)) continue;
    unexpected++;
    if (unexpectedExamples.length < 5) unexpectedExamples.push(url);
  }
  const duplicateExamples = [];
  for (const [url, raws] of distinct) {
    if (raws.length > 1 && duplicateExamples.length < 5) duplicateExamples.push({ url, requestedAs: raws });
  }
  const cpu = process.cpuUsage(cpuAtLastTally);
  cpuAtLastTally = process.cpuUsage();
  return {
    requests: web.log.length,
    robotsRequests: robots,
    statuses,
    /** GET 200 responses for pages (robots.txt excluded), duplicates included. */
    page200,
    /** Distinct canonical URLs among them: the pages the crawler really got. */
    distinctPages: distinct.size,
    /** Expected pages never answered with a 200. */
    missing,
    /** 200 pages outside the expected set (should be 0). */
    unexpected,
    unexpectedExamples,
    bytes,
    duplicateExamples,
    /** ms since epoch (performance.timeOrigin + now()): first request's arrival, last response's end. */
    firstRequestAtMs: web.log.length === 0 ? null : firstStart,
    lastResponseAtMs: web.log.length === 0 ? null : lastEnd,
    /** CPU seconds the server spent since the last tally (user + sys). */
    serverCpuS: (cpu.user + cpu.system) / 1e6,
  };
}
