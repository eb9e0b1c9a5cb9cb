/**
 * bench-queue-server: the queue server's CPU per page, measured on a real `petrel queue-server` process
 * driven by a synthetic fleet. A benchmark, not a test: it proves nothing by passing; read the figures.
 *
 * The fleet is `--fetchers` loops in this process, each with the fetcher's own QueueClient (signed
 * requests over real HTTP on loopback, as `petrel fetcher` sends them). They claim schedules and post
 * results made up on the spot, without any web: every page answers 200 with `--links` links (mostly to
 * its own host, some to the other seed hosts), a title, an excerpt, a signature and a simhash; every
 * robots.txt answers 404. No connection is made to the URLs in the crawl (127.0.1.x, never contacted):
 * the only sockets are to the queue server on 127.0.0.1.
 *
 * Measured from /proc/PID/stat of the queue server: CPU (user + system) from `listening` until every
 * simulated fetcher was told `done` (the crawl's work: claims, results, commits), divided by the pages
 * applied; start-up before `listening` is reported apart. Also its peak RSS (VmHWM), the group commits
 * (the crawl database's and the cache's B-Tree txid, read from the files afterwards) and this driver's
 * own CPU, for scale.
 *
 *   npm run build && node dist/scripts/bench-queue-server.js [--pages 20000] [--links 50] [--profile] [--json]
 *
 * Two more modes measure the queue server at crawl scale (scripts/bench-queue-server/):
 *   node dist/scripts/bench-queue-server.js scale [--target-urls N] ...  a synthetic fleet answering from a
 *     deterministic link graph over 100,000 hosts until the crawl knows N URLs; kill -9, restart, check
 *   node dist/scripts/bench-queue-server.js inject [--urls N] ...  URLs injected with no fetchers: RSS, rate
 */
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { QueueClient } from '../fetcher/queue-client.js';
import { PROTOCOL_VERSION, type ClaimResponse, type ItemResult, type Schedule } from '../shared/protocol.js';
import { mulberry32, prng } from './test-web/prng.js';
import { paragraph } from './test-web/text.js';
import { buildIndexData, type IndexData } from '../shared/index-data.js';
import { txidOf } from './bench-queue-server/crawl-db-file.js';
import { profilesIn, topSelfTimes } from './bench-queue-server/cpu-profile.js';
import { runInject } from './bench-queue-server/inject.js';
import { quantiles } from './bench-queue-server/percentiles.js';
import { cpuOf, memoryOf } from './bench-queue-server/proc.js';
import { runScale } from './bench-queue-server/scale.js';
import { intOption } from './bench-queue-server/int-option.js';

/** The build this script belongs to (dist/). */
const OWN_DIST = fileURLToPath(new URL('..', import.meta.url));
/** How fetcher/fetcher.ts batches results: this many, or this long after the first one waits, or slot end. */
const FLUSH_COUNT = 64;
const FLUSH_DELAY_MS = 200;

const USAGE = `Usage: node dist/scripts/bench-queue-server.js [scale|inject] [options]

Starts a real petrel queue-server on a fresh data directory and drives it with simulated fetchers
(signed requests over HTTP on loopback; results generated without any web), then prints the queue
server's CPU per page from /proc/PID/stat.

Options:
  --pages N         pages the crawl fetches (--max-pages; default 20000)
  --links N         links per page (default 50)
  --hosts N         seed hosts, 127.0.1.1 and up (never contacted; default 20)
  --fetchers N      simulated fetchers (default 2)
  --concurrency N   slots one claim asks for (a fetcher's --concurrency; default 16)
  --batch N         results per post, as the fetcher batches them (default 64)
  --in-flight N     results posts one simulated fetcher keeps open at once (default 8)
  --rate N          pages per second the whole fleet "fetches" (results released at that pace and posted
                    as the fetcher posts them: 64 at a time, 200 ms after the first waits, or when a
                    slot is done); 0: as fast as the queue server takes them (default 0)
  --index-data      pages carry search index data as fetchers build it (buildIndexData of ~2,000 words
                    of generated prose, the page's links as anchors)
  --no-index        the queue server runs with --no-index (the index data, if any, is not indexed)
  --qs-arg ARG      an argument for the queue server's command line, e.g. --qs-arg=--heap-growth=50
                    (repeat it for more)
  --compare N       N rounds, each one run with the index and one with --no-index (alternating, the
                    same options otherwise), then the ratios index / --no-index of claim latency p50
                    and p95 and of CPU per page, per round and their medians (implies --index-data)
  --profile         run the queue server under node --cpu-prof and print its top functions by self time
  --top N           functions in the profile (default 25)
  --dist DIR        the Petrel build to run (a dist/ directory; default: the one holding this script),
                    e.g. a copy of an older build to compare against
  --baseline-dist DIR  with --rounds N: N rounds, each one run of --dist and one of this build (the
                    order alternating round by round), then per round and as medians the ratios
                    --dist / baseline of CPU per page, peak RSS and claim latency p50 and p95: on this
                    shared machine one build's CPU per page drifts 10 to 20 % between runs, so two
                    builds are compared by pairs
  --rounds N        rounds of --baseline-dist (default 3)
  --keep            keep the data directory (and the profile)
  --json            print the report as JSON only
  --help            show this help

Modes (their own options: node dist/scripts/bench-queue-server.js MODE --help):
  scale             a crawl of a deterministic link graph over 100,000 hosts until the crawl knows
                    --target-urls URLs: progress as JSON lines, kill -9, restart, nothing dropped
  inject            new URLs through POST /api/control/inject with no fetchers: RSS and URLs/s
`;

interface Options {
  pages: number;
  links: number;
  hosts: number;
  fetchers: number;
  concurrency: number;
  batch: number;
  inFlight: number;
  rate: number;
  indexData: boolean;
  noIndex: boolean;
  qsArgs: string[];
  compare: number;
  profile: boolean;
  top: number;
  keep: boolean;
  json: boolean;
  dist: string;
  baselineDist: string | null;
  rounds: number;
}

function options(): Options | null {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      pages: { type: 'string', default: '20000' },
      links: { type: 'string', default: '50' },
      hosts: { type: 'string', default: '20' },
      fetchers: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '16' },
      batch: { type: 'string', default: '64' },
      'in-flight': { type: 'string', default: '8' },
      rate: { type: 'string', default: '0' },
      'index-data': { type: 'boolean', default: false },
      'no-index': { type: 'boolean', default: false },
      'qs-arg': { type: 'string', multiple: true, default: [] },
      compare: { type: 'string', default: '0' },
      profile: { type: 'boolean', default: false },
      top: { type: 'string', default: '25' },
      keep: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      dist: { type: 'string', default: OWN_DIST },
      'baseline-dist': { type: 'string' },
      rounds: { type: 'string', default: '3' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return null;
  }
  const int = (name: string, text: string, max: number): number => intOption(name, text, 1, max);
  return {
    pages: int('pages', values.pages, 10_000_000),
    links: int('links', values.links, 5000),
    hosts: int('hosts', values.hosts, 250),
    fetchers: int('fetchers', values.fetchers, 64),
    concurrency: int('concurrency', values.concurrency, 1024),
    batch: int('batch', values.batch, 2000),
    inFlight: int('in-flight', values['in-flight'], 256),
    rate: values.rate === '0' ? 0 : int('rate', values.rate, 1_000_000),
    indexData: values['index-data'] || values.compare !== '0',
    noIndex: values['no-index'],
    qsArgs: values['qs-arg'],
    compare: values.compare === '0' ? 0 : int('compare', values.compare, 100),
    profile: values.profile,
    top: int('top', values.top, 1000),
    keep: values.keep,
    json: values.json,
    dist: values.dist,
    baselineDist: values['baseline-dist'] ?? null,
    rounds: int('rounds', values.rounds, 100),
  };
}

/** The made-up web: hosts, and the result of every item a schedule holds. */
class SyntheticWeb {
  readonly origins: string[];
  readonly #links: number;
  /** Distinct page URLs per host: four times the host's share of the page budget, so the frontier never runs dry. */
  readonly #space: number;
  readonly #random = mulberry32(0x5eed);

  /** Index data of a few generated pages (anchors filled in per page), or null without --index-data. */
  readonly #indexTemplates: IndexData[] | null;

  constructor(opts: Options) {
    this.origins = Array.from({ length: opts.hosts }, (_, h) => `http://127.0.1.${h + 1}`);
    this.#links = opts.links;
    this.#indexTemplates = opts.indexData ? Array.from({ length: 16 }, (_, k) => indexTemplate(k)) : null;
    this.#space = Math.max(100, Math.ceil((4 * opts.pages) / opts.hosts));
  }

  #int(bound: number): number {
    return Math.floor(this.#random() * bound);
  }

  #hex16(): string {
    return (this.#int(2 ** 32).toString(16).padStart(8, '0') + this.#int(2 ** 32).toString(16).padStart(8, '0')).slice(0, 16);
  }

  resultsOf(schedule: Schedule, fetchedAt: number): ItemResult[] {
    const out: ItemResult[] = [];
    for (const slot of schedule.slots) {
      for (const item of slot.items) {
        if (item.kind === 'robots') out.push(this.#robots(slot.slot, item.i, item.url, fetchedAt));
        else out.push(this.#page(slot.slot, item.i, item.url, new URL(slot.origin).origin, fetchedAt));
      }
    }
    return out;
  }

  #base(slot: number, i: number, url: string, fetchedAt: number): Omit<ItemResult, 'status' | 'page' | 'links' | 'signature' | 'contentType' | 'bytes' | 'wireBytes'> {
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
      cache: { etag: null, lastModified: null, date: new Date(fetchedAt).toUTCString(), age: null, expires: null, cacheControl: null },
      robotsTxt: null,
      index: null,
    };
  }

  #robots(slot: number, i: number, url: string, fetchedAt: number): ItemResult {
    return { ...this.#base(slot, i, url, fetchedAt), status: 404, contentType: 'text/html', bytes: 150, wireBytes: 150, signature: null, page: null, links: [] };
  }

  #page(slot: number, i: number, url: string, origin: string, fetchedAt: number): ItemResult {
    const links: string[] = [];
    for (let l = 0; l < this.#links; l++) {
      // Nine in ten links stay on the page's host, like a documentation site's navigation.
      const host = this.#int(10) === 0 ? this.origins[this.#int(this.origins.length)]! : origin;
      links.push(`${host}/p/${this.#int(this.#space)}.html`);
    }
    const date = new Date(fetchedAt).toUTCString();
    const title = `Page ${url.slice(url.lastIndexOf('/') + 1)} of the synthetic documentation`;
    return {
      ...this.#base(slot, i, url, fetchedAt),
      status: 200,
      contentType: 'text/html; charset=utf-8',
      bytes: 14_000,
      wireBytes: 14_000,
      signature: this.#hex16(),
      cache: { etag: `"${this.#hex16()}"`, lastModified: date, date, age: null, expires: null, cacheControl: 'max-age=3600' },
      page: {
        title,
        description: 'A page generated by the queue-server benchmark.',
        language: 'en',
        // Distinct prose per page, as a documentation site has: one sentence repeated on every page
        // with only its number changed is a template (url-shape.ts), and its shape would be refused as
        // a trap after ten pages (which stopped this benchmark at about 2,900 of 20,000 pages).
        excerpt: `${title}. ${paragraph(prng(url))}`.slice(0, 500),
        canonical: null,
        noindex: false,
        nofollow: false,
        outlinks: links.length,
        simhash: this.#hex16(),
      },
      links,
      index: this.#indexTemplates === null ? null : { ...this.#indexTemplates[this.#int(this.#indexTemplates.length)]!, anchors: links.map((link, k) => ({ url: link, terms: ANCHOR_TERMS[k % ANCHOR_TERMS.length]! })) },
    };
  }
}

const VOCABULARY = 'petrel storm ocean wind wave shearwater albatross fulmar gannet tern plover sandpiper cliff colony nest burrow island harbour tide current swell spray foam reef shoal kelp plankton krill squid herring mackerel north south east west dawn dusk night season migration flight glide soar skim dive feed rest breed moult observer survey census record count estimate measure ring band track signal beacon satellite logger weather pressure front gale calm fog drizzle squall horizon latitude longitude chart compass bearing vessel deck mast sail hull keel crew captain watch log entry report archive index page link crawler'.split(' ');
const ANCHOR_TERMS = [['section', 'page'], ['next'], ['index', 'of', 'report'], ['storm', 'petrel', 'survey']];

/** Index data of a page of ~2,000 words (about a 14 KB page's visible text), as a fetcher builds it. */
function indexTemplate(k: number): IndexData {
  const random = mulberry32(0x1dea + k);
  const words = (n: number) => Array.from({ length: n }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]!).join(' ');
  const headings = Array.from({ length: 6 }, () => words(4));
  return buildIndexData({ title: `Page ${k} of the synthetic documentation`, headings, bodyText: `${headings.join('. ')}. ${words(2000)}.`, language: 'en', anchors: [] });
}

interface FleetTally {
  /** ms from sending a claim to its answer, for claims answered with a schedule. */
  claimMs: number[];
  posts: number;
  resultsPosted: number;
  applied: number;
  duplicates: number;
}

/** One simulated fetcher: claims, makes the results up, posts them in batches without waiting for acks. */
async function simulatedFetcher(id: number, client: QueueClient, web: SyntheticWeb, opts: Options, tally: FleetTally): Promise<void> {
  const fetcherId = `bench-fetcher-${id}`;
  const stats = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };
  const open = new Set<Promise<void>>();
  // Results go as the fetcher sends them: a binary frame of the version the schedules name (JSON from a
  // build whose schedules name none).
  let frame = 0;
  const post = (scheduleId: string, results: ItemResult[]): void => {
    const done = client.results({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId, results }, { frame }).then((response) => {
      tally.applied += response.applied;
      tally.duplicates += response.duplicates;
    });
    const tracked = done.finally(() => open.delete(tracked));
    open.add(tracked);
    tally.posts++;
    tally.resultsPosted += results.length;
  };
  const claim = async () => {
    const sent = performance.now();
    const answer = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: opts.concurrency, waitMs: 2000, stats });
    if (answer.kind === 'schedule') {
      tally.claimMs.push(performance.now() - sent);
      frame = answer.schedule.resultsFrame ?? 0;
    }
    return answer;
  };
  if (opts.rate === 0) {
    for (;;) {
      while (open.size >= opts.inFlight) await Promise.race(open);
      const answer = await claim();
      if (answer.kind === 'done') break;
      if (answer.kind === 'wait') continue;
      const results = web.resultsOf(answer.schedule, Date.now());
      for (let at = 0; at < results.length; at += opts.batch) post(answer.schedule.id, results.slice(at, at + opts.batch));
    }
    await Promise.all(open);
    return;
  }
  await pacedFetcher(claim, post, web, opts);
  await Promise.all(open);
}

/**
 * The paced fleet member: results of claimed schedules are "fetched" at `--rate / --fetchers` per second
 * and posted the way fetcher/fetcher.ts posts them (FLUSH_COUNT, FLUSH_DELAY_MS, slot end). It claims
 * again whenever fewer results than one claim's worth wait to be released.
 */
async function pacedFetcher(
  claim: () => Promise<ClaimResponse>,
  post: (scheduleId: string, results: ItemResult[]) => void,
  web: SyntheticWeb,
  opts: Options,
): Promise<void> {
  const perMs = opts.rate / opts.fetchers / 1000;
  const waiting: { scheduleId: string; slot: number; lastOfSlot: boolean; result: ItemResult }[] = [];
  const batches = new Map<string, { results: ItemResult[]; since: number }>();
  let claiming: Promise<ClaimResponse> | null = null;
  let done = false;
  let released = 0;
  const started = performance.now();
  const flush = (scheduleId: string): void => {
    const batch = batches.get(scheduleId);
    if (batch === undefined || batch.results.length === 0) return;
    batches.delete(scheduleId);
    post(scheduleId, batch.results);
  };
  while (!done || waiting.length > 0 || batches.size > 0) {
    if (!done && claiming === null && waiting.length < opts.concurrency * 8) {
      claiming = claim();
      claiming.then((answer) => {
        claiming = null;
        if (answer.kind === 'done') done = true;
        if (answer.kind !== 'schedule') return;
        const results = web.resultsOf(answer.schedule, Date.now());
        let at = 0;
        for (const slot of answer.schedule.slots) {
          for (let k = 0; k < slot.items.length; k++, at++) {
            waiting.push({ scheduleId: answer.schedule.id, slot: slot.slot, lastOfSlot: k === slot.items.length - 1, result: results[at]! });
          }
        }
      }, () => {
        claiming = null;
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    const now = performance.now();
    const due = Math.floor((now - started) * perMs) - released;
    for (let k = 0; k < due && waiting.length > 0; k++) {
      const next = waiting.shift()!;
      released++;
      let batch = batches.get(next.scheduleId);
      if (batch === undefined) batches.set(next.scheduleId, (batch = { results: [], since: now }));
      batch.results.push(next.result);
      if (batch.results.length >= FLUSH_COUNT || next.lastOfSlot) flush(next.scheduleId);
    }
    if (waiting.length === 0) released = Math.floor((now - started) * perMs); // no backlog to catch up on
    for (const [scheduleId, batch] of batches) if (now - batch.since >= FLUSH_DELAY_MS || (done && waiting.length === 0)) flush(scheduleId);
  }
}

function percentiles(values: number[]): { p50: number | null; p95: number | null; max: number | null } {
  const [p50, p95, max] = quantiles(values, values.length, [0.5, 0.95, 1]);
  return { p50: p50 ?? null, p95: p95 ?? null, max: max ?? null };
}

/** Bytes of the files directly in a directory (0 when it does not exist). */
function dirBytes(dir: string): number {
  try {
    return readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  } catch {
    return 0;
  }
}

async function main(): Promise<number> {
  const opts = options();
  if (opts === null) return 0;
  if (opts.baselineDist !== null) return compareBuilds(opts, opts.baselineDist);
  if (opts.compare === 0) return (await runOnce(opts)).code;
  const rounds: { index: Report; noIndex: Report }[] = [];
  for (let r = 0; r < opts.compare; r++) {
    const index = (await runOnce({ ...opts, noIndex: false, json: true, quiet: true })).report;
    const noIndex = (await runOnce({ ...opts, noIndex: true, json: true, quiet: true })).report;
    if (index === null || noIndex === null) return 1;
    rounds.push({ index, noIndex });
    if (!opts.json) process.stderr.write(`round ${r + 1}: ${describeRound(index, noIndex)}\n`);
  }
  const ratio = (pick: (r: Report) => number | null) => rounds.map(({ index, noIndex }) => (pick(index) ?? NaN) / (pick(noIndex) ?? NaN));
  const summary = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, loadavg: loadavg() },
    options: opts,
    rounds: rounds.map(({ index, noIndex }) => ({ index: brief(index), noIndex: brief(noIndex) })),
    medianRatio: {
      claimP50: median(ratio((r) => r.claimMs.p50)),
      claimP95: median(ratio((r) => r.claimMs.p95)),
      cpuMsPerPage: median(ratio((r) => r.cpuMsPerPage)),
    },
  };
  if (opts.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const m = summary.medianRatio;
    process.stdout.write(`median of ${rounds.length} rounds, index / --no-index: claim p50 ${m.claimP50.toFixed(2)}, claim p95 ${m.claimP95.toFixed(2)}, CPU per page ${m.cpuMsPerPage.toFixed(2)}; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  }
  return 0;
}

/** `--baseline-dist`: the two builds run by pairs, each round in the other order, and the pairs' ratios. */
async function compareBuilds(opts: Options, baselineDist: string): Promise<number> {
  const rounds: { build: Report; baseline: Report }[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const runs: Record<'build' | 'baseline', Report | null> = { build: null, baseline: null };
    for (const which of r % 2 === 0 ? (['build', 'baseline'] as const) : (['baseline', 'build'] as const)) {
      runs[which] = (await runOnce({ ...opts, dist: which === 'build' ? opts.dist : baselineDist, json: true, quiet: true })).report;
      if (runs[which] === null) return 1;
    }
    const round = { build: runs.build!, baseline: runs.baseline! };
    rounds.push(round);
    if (!opts.json) process.stderr.write(`round ${r + 1}: build ${(round.build.cpuMsPerPage ?? NaN).toFixed(3)} ms CPU/page, ${round.build.peakRssMiB} MiB | baseline ${(round.baseline.cpuMsPerPage ?? NaN).toFixed(3)}, ${round.baseline.peakRssMiB} MiB | load ${round.build.machine.loadavg[0]!.toFixed(2)}\n`);
  }
  const ratios = (pick: (r: Report) => number | null) => rounds.map(({ build, baseline }) => (pick(build) ?? NaN) / (pick(baseline) ?? NaN));
  const perRound = { cpuMsPerPage: ratios((r) => r.cpuMsPerPage), peakRssMiB: ratios((r) => r.peakRssMiB), claimP50: ratios((r) => r.claimMs.p50), claimP95: ratios((r) => r.claimMs.p95) };
  const summary = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, loadavg: loadavg() },
    options: opts,
    rounds: rounds.map(({ build, baseline }) => ({ build: brief(build), baseline: brief(baseline) })),
    ratios: perRound,
    medianRatio: Object.fromEntries(Object.entries(perRound).map(([name, values]) => [name, median(values)])),
  };
  if (opts.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const m = summary.medianRatio as Record<keyof typeof perRound, number>;
    const f = (values: number[]) => values.map((v) => v.toFixed(3)).join(', ');
    process.stdout.write(
      `build / baseline over ${rounds.length} rounds (round by round; median): CPU per page ${f(perRound.cpuMsPerPage)}; ${m.cpuMsPerPage.toFixed(3)} | peak RSS ${f(perRound.peakRssMiB)}; ${m.peakRssMiB.toFixed(3)} | claim p50 ${m.claimP50.toFixed(2)}, p95 ${m.claimP95.toFixed(2)}; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`,
    );
  }
  return 0;
}

/** The median of per-round ratios (the mean of the two middle ones for an even count). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

type Report = Awaited<ReturnType<typeof runOnce>>['report'] & object;

function brief(r: Report) {
  return { pages: r.pages, claimsAnswered: r.claimsAnswered, claimMs: r.claimMs, cpuMsPerPage: r.cpuMsPerPage, peakRssMiB: r.peakRssMiB, groupCommits: r.groupCommits, indexBytesOnDisk: r.indexBytesOnDisk, loadavg: r.machine.loadavg };
}

function describeRound(index: Report, noIndex: Report): string {
  const f = (n: number | null, d = 1) => (n === null ? '-' : n.toFixed(d));
  const one = (r: Report) => `${r.pages} pages, claim p50 ${f(r.claimMs.p50)} p95 ${f(r.claimMs.p95)} ms, ${f(r.cpuMsPerPage, 3)} ms CPU/page`;
  return `index ${one(index)} | --no-index ${one(noIndex)} | load ${index.machine.loadavg[0]!.toFixed(2)}`;
}

async function runOnce(opts: Options & { quiet?: boolean }) {
  const log = (text: string): void => {
    if (!opts.json) process.stderr.write(`${text}\n`);
  };
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-qs-'));
  const data = join(dir, 'data');
  const profileDir = join(dir, 'profile');
  if (opts.profile) mkdirSync(profileDir);
  const web = new SyntheticWeb(opts);
  const args = [
    ...(opts.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
    join(opts.dist, 'cli/petrel.js'), 'queue-server', '--data', data, '--port', '0', '--once',
    ...web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`]),
    '--scope', 'host', '--delay-ms', '0', '--host-concurrency', '16', '--max-pages', String(opts.pages),
    ...(opts.noIndex ? ['--no-index'] : []),
    ...opts.qsArgs,
  ];
  log(`bench-queue-server: ${opts.pages.toLocaleString('en-US')} pages, ${opts.links} links each, ${opts.hosts} hosts, ${opts.fetchers} simulated fetchers, data in ${dir}`);
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const events: Record<string, Record<string, unknown>> = {};
  let onEvent: (() => void) | null = null;
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      const event = JSON.parse(line) as { event?: string };
      if (typeof event.event === 'string') events[event.event] = event;
      onEvent?.();
    } catch {
      // not an event line
    }
  });
  const listening = await new Promise<Record<string, unknown> | null>((resolve) => {
    onEvent = () => {
      if (events.listening !== undefined) resolve(events.listening);
    };
    void exited.then(() => resolve(null));
  });
  if (listening === null) {
    process.stderr.write(`bench-queue-server: the queue server exited before listening:\n${stderr}\n`);
    return { code: 1, report: null };
  }
  const pid = Number(listening.pid);
  const startupMs = performance.now() - started;
  const cpuAtListen = cpuOf(pid) ?? { user: 0, system: 0 };
  // The queue server exits soon after the last `done`: sample, so the last figures survive it.
  let lastCpu = cpuAtListen;
  let peakKib: number | null = null;
  const sample = (): void => {
    lastCpu = cpuOf(pid) ?? lastCpu;
    peakKib = memoryOf(pid)?.peakKib ?? peakKib;
  };
  const sampler = setInterval(sample, 200);
  const token = readFileSync(String(listening.tokenFile), 'utf8').trim();
  const abort = new AbortController();
  // Every open request listens on it (QueueClient), more than the default of 10 at once.
  setMaxListeners(0, abort.signal);
  const client = new QueueClient({ serverUrl: String(listening.url), token, signal: abort.signal, connections: 4 * opts.inFlight });
  const tally: FleetTally = { claimMs: [], posts: 0, resultsPosted: 0, applied: 0, duplicates: 0 };
  const driverCpu0 = process.cpuUsage();
  const work0 = performance.now();
  await Promise.all(Array.from({ length: opts.fetchers }, (_, i) => simulatedFetcher(i, client, web, opts, tally)));
  const workMs = performance.now() - work0;
  sample();
  clearInterval(sampler);
  const cpuAtDone = lastCpu;
  const driverCpu = process.cpuUsage(driverCpu0);
  await client.close();
  const code = await exited;
  const finished = events.finished as { summary?: { pagesFetched?: number; requests?: number; urlsDiscovered?: number; robotsRequests?: number; errorsByCode?: Record<string, number> } } | undefined;
  const summary = finished?.summary ?? {};
  const pages = summary.pagesFetched ?? 0;
  const crawlDbCommits = await txidOf(opts.dist, join(data, 'crawldb.btree'));
  const cacheCommits = await txidOf(opts.dist, join(data, 'cache.btree'));
  const workUserMs = cpuAtDone.user - cpuAtListen.user;
  const workSystemMs = cpuAtDone.system - cpuAtListen.system;
  const workCpuMs = workUserMs + workSystemMs;
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, loadavg: loadavg() },
    options: opts,
    exit: code,
    pages,
    requests: summary.requests ?? null,
    urlsDiscovered: summary.urlsDiscovered ?? null,
    errorsByCode: summary.errorsByCode ?? null,
    resultsPosted: tally.resultsPosted,
    resultsApplied: tally.applied,
    duplicates: tally.duplicates,
    posts: tally.posts,
    startupMs: Math.round(startupMs),
    startupCpuMs: cpuAtListen.user + cpuAtListen.system,
    workMs: Math.round(workMs),
    workCpuMs,
    workUserMs,
    workSystemMs,
    cpuMsPerPage: pages === 0 ? null : workCpuMs / pages,
    cpuMsPerResult: tally.applied === 0 ? null : workCpuMs / tally.applied,
    pagesPerSecond: pages / (workMs / 1000),
    peakRssMiB: peakKib === null ? null : Math.round((peakKib as number) / 1024),
    groupCommits: crawlDbCommits,
    cacheCommits,
    resultsPerCommit: crawlDbCommits === null || crawlDbCommits === 0 ? null : tally.applied / crawlDbCommits,
    driverCpuMs: Math.round((driverCpu.user + driverCpu.system) / 1000),
    claimsAnswered: tally.claimMs.length,
    claimMs: percentiles(tally.claimMs),
    indexBytesOnDisk: dirBytes(join(data, 'index')),
    profile: [] as { name: string; ms: number; share: number }[],
  };
  if (opts.profile) {
    const file = profilesIn(profileDir)[0];
    if (file !== undefined) report.profile = topSelfTimes(file, opts.top);
  }
  if (opts.quiet === true) {
    // --compare prints its own summary
  } else if (opts.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const f = (n: number | null, digits = 0): string => (n === null ? '-' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }));
    process.stdout.write(
      [
        `pages ${f(pages)} (results applied ${f(tally.applied)}, duplicates ${f(tally.duplicates)}, posts ${f(tally.posts)}), URLs discovered ${f(report.urlsDiscovered)}, refused or failed by code ${JSON.stringify(report.errorsByCode ?? {})}`,
        `queue server: ${f(report.cpuMsPerPage, 3)} ms CPU per page (${f(workCpuMs)} ms = ${f(workUserMs)} user + ${f(workSystemMs)} system over ${f(workMs)} ms of work, ${f(report.pagesPerSecond)} pages/s); start-up ${f(startupMs)} ms (${f(report.startupCpuMs)} ms CPU); peak RSS ${f(report.peakRssMiB)} MiB`,
        `claims answered with a schedule: ${f(tally.claimMs.length)}, ms from sending to answer p50 ${f(report.claimMs.p50, 1)}, p95 ${f(report.claimMs.p95, 1)}, max ${f(report.claimMs.max, 1)}; index on disk ${f(report.indexBytesOnDisk)} bytes`,
        `group commits: ${f(crawlDbCommits)} (${f(report.resultsPerCommit, 1)} results each, ${f(crawlDbCommits === null ? null : crawlDbCommits / (workMs / 1000), 1)} per second); driver CPU ${f(report.driverCpuMs)} ms; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
        ...(opts.profile ? ['', 'queue server profile (self time, whole process):', ...report.profile.map((p) => `  ${f(p.ms).padStart(7)} ms ${f(p.share * 100, 1).padStart(5)} %  ${p.name}`)] : []),
        '',
      ].join('\n'),
    );
  }
  if (opts.keep) log(`bench-queue-server: kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  if (code !== 0) {
    process.stderr.write(`bench-queue-server: the queue server exited with ${code}:\n${stderr}\n`);
    return { code: 1, report: null };
  }
  return { code: 0, report };
}

/** The mode named by the first argument (the CPU-per-page run when there is none). */
function run(): Promise<number> {
  const mode = process.argv[2];
  if (mode === 'scale') return runScale(process.argv.slice(3), OWN_DIST);
  if (mode === 'inject') return runInject(process.argv.slice(3), OWN_DIST);
  return main();
}

run().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench-queue-server: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
