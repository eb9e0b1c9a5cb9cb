/**
 * bench-wake: how soon a parked claim is answered once work arrives. A benchmark, not a test (the
 * property that a parked claim is woken, not timed out or polled, is tested in test/unit/claim-wake
 * and test/integration/claim-wake).
 *
 * A real `petrel queue-server` (continuous mode, nothing to do) on loopback; N claims with the
 * protocol's longest waitMs park on it, from N fetcher ids over one signed client (the fetcher's own
 * QueueClient); once the status shows every one of them taken, N URLs on N origins are injected with
 * POST /api/control/inject, so that each claim has a slot (its origin's robots.txt) to be answered
 * with. The latency of a claim is from just before the inject request is sent to its answer arriving
 * here, so it includes the inject request itself: admitting N URLs, then waking the claims (the
 * queue server answers the inject before the woken claims run). `afterInjectAnswered` is the same
 * from the inject's answer on: the wake and the claims' answers alone. Repeated for R rounds (new
 * claims, new origins), after W warm-up rounds that are reported but not counted (the first inject
 * and claims of a fresh process run before V8 has compiled their code; a queue server that has
 * crawled for a minute is past that).
 * Nothing ever connects to the injected origins: no fetcher runs.
 *
 * Prints one JSON object (p50/p95/max over all claims, per round too) and exits 1 when a claim is not
 * answered with a schedule, or when the p95 is over the goal (GOAL_MS).
 *
 *   npm run build && node dist/scripts/bench-wake.js [--claims 100] [--rounds 5] [--warmup 1]
 */
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { QueueClient } from '../fetcher/queue-client.js';
import { PROTOCOL_VERSION, type ClaimResponse } from '../shared/protocol.js';

const PETREL = fileURLToPath(new URL('../cli/petrel.js', import.meta.url));
const GOAL_MS = 50;
/** The protocol's longest claim wait: a claim answered before it was woken. */
const WAIT_MS = 60_000;
/** Ports of the injected origins (http://127.0.0.1:PORT/): distinct origins, never connected to. */
const FIRST_PORT = 20_000;
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

const USAGE = `Usage: node dist/scripts/bench-wake.js [--claims N] [--rounds N] [--warmup N]

Parks N claims (waitMs ${WAIT_MS}) on a real petrel queue-server with nothing to do, injects N URLs on N
origins through POST /api/control/inject, and times each claim from the inject to its answer. Prints
p50/p95/max as JSON; exits 1 when a claim is not answered with a schedule or the p95 is over ${GOAL_MS} ms.
  --claims N   claims parked at once (default 100, at most 1000)
  --rounds N   rounds, each with new claims and new origins (default 5)
  --warmup N   rounds before those, reported but not counted (default 1)
`;

interface Listening {
  url: string;
  tokenFile: string;
  adminTokenFile: string;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { claims: { type: 'string' }, rounds: { type: 'string' }, warmup: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return 0;
  }
  const claims = positiveInteger('--claims', values.claims ?? '100', 1000);
  const rounds = positiveInteger('--rounds', values.rounds ?? '5', 100);
  const warmup = values.warmup === '0' ? 0 : positiveInteger('--warmup', values.warmup ?? '1', 10);
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-wake-'));
  // Inject adds to a crawl, so there is one: its seed's robots.txt is leased to a claim that never
  // answers (for longer than the benchmark runs), so nothing else is to be done between the injects.
  const seed = `http://127.0.0.1:${FIRST_PORT - 1}/index.html`;
  const server = spawn(process.execPath, [PETREL, 'queue-server', '--data', join(dir, 'data'), '--port', '0', '--delay-ms', '0', '--scope', 'any', '--seed', seed, '--lease-ms', '1h'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stopping = new AbortController();
  // Every parked claim listens on it.
  setMaxListeners(0, stopping.signal);
  let client: QueueClient | null = null;
  try {
    const listening = await listeningOf(server.stdout);
    const adminToken = readFileSync(listening.adminTokenFile, 'utf8').trim();
    client = new QueueClient({ serverUrl: listening.url, token: readFileSync(listening.tokenFile, 'utf8').trim(), signal: stopping.signal, connections: claims + 4 });
    const held = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'seed-holder', name: 'seed-holder', capacity: 1, waitMs: 0, stats: STATS });
    if (held.kind !== 'schedule') throw new Error(`the seed's robots.txt was not handed out (${held.kind})`);
    const perRound: (Percentiles & { injectAnsweredMs: number; warmup: boolean })[] = [];
    const all: number[] = [];
    const afterAnswer: number[] = [];
    let notWoken = 0;
    for (let round = 0; round < warmup + rounds; round++) {
      const ids = Array.from({ length: claims }, (_, i) => `wake-${round}-${i}`);
      let injectedAt = Number.NaN;
      const answers = ids.map((fetcherId) =>
        client!
          .claim({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: 1, waitMs: WAIT_MS, stats: STATS })
          .then((response: ClaimResponse) => ({ response, ms: performance.now() - injectedAt })),
      );
      await untilParked(listening.url, adminToken, ids);
      const urls = ids.map((_, i) => `http://127.0.0.1:${FIRST_PORT + round * claims + i}/index.html`);
      injectedAt = performance.now();
      const injected = await inject(listening.url, adminToken, urls);
      const injectAnsweredMs = performance.now() - injectedAt;
      if (injected !== claims) throw new Error(`round ${round}: ${injected} of ${claims} URLs admitted`);
      const results = await Promise.all(answers);
      const latencies = results.filter((result) => result.response.kind === 'schedule').map((result) => result.ms);
      notWoken += claims - latencies.length;
      const counted = round >= warmup;
      if (counted) {
        all.push(...latencies);
        afterAnswer.push(...latencies.map((ms) => ms - injectAnsweredMs));
      }
      perRound.push({ ...summary(latencies), injectAnsweredMs: tenths(injectAnsweredMs), warmup: !counted });
    }
    const overall = summary(all);
    const report = { claims, rounds, warmup, samples: all.length, notWoken, ...overall, goalMs: GOAL_MS, afterInjectAnswered: summary(afterAnswer), perRound };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (notWoken > 0) process.stderr.write(`bench-wake: ${notWoken} claims were not answered with a schedule\n`);
    if (overall.p95Ms >= GOAL_MS) process.stderr.write(`bench-wake: p95 ${overall.p95Ms} ms, over the goal of ${GOAL_MS} ms\n`);
    return notWoken === 0 && overall.p95Ms < GOAL_MS ? 0 : 1;
  } finally {
    stopping.abort();
    await client?.close().catch(() => undefined);
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

function positiveInteger(name: string, text: string, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > max) throw new RangeError(`${name} must be an integer in [1, ${max}], got ${text}`);
  return value;
}

function listeningOf(stdout: NodeJS.ReadableStream): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: stdout });
    const timer = setTimeout(() => reject(new Error('the queue server did not start within 20 s')), 20_000);
    lines.on('line', (line) => {
      try {
        const event = JSON.parse(line) as Listening & { event?: string };
        if (event.event !== 'listening') return;
        clearTimeout(timer);
        resolve(event);
      } catch {
        // not an event line
      }
    });
  });
}

/** Until the queue server has taken every claim (each registers its fetcher before it parks). */
async function untilParked(serverUrl: string, adminToken: string, ids: readonly string[]): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const response = await fetch(new URL('/api/status', serverUrl), { headers: { authorization: `Bearer ${adminToken}` } });
    if (!response.ok) throw new Error(`GET /api/status answered ${response.status}`);
    const known = new Set(((await response.json()) as { fetchers: { id: string }[] }).fetchers.map((fetcher) => fetcher.id));
    if (ids.every((id) => known.has(id))) return;
    if (performance.now() > deadline) throw new Error('the claims were not all taken within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function inject(serverUrl: string, adminToken: string, urls: readonly string[]): Promise<number> {
  const response = await fetch(new URL('/api/control/inject', serverUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ urls }),
  });
  if (!response.ok) throw new Error(`POST /api/control/inject answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { admitted: number }).admitted;
}

interface Percentiles {
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

/** Nearest-rank percentiles, ms with one decimal. */
function summary(latencies: readonly number[]): Percentiles {
  const sorted = [...latencies].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  return { p50Ms: tenths(rank(50)), p95Ms: tenths(rank(95)), maxMs: tenths(sorted.at(-1) ?? Number.NaN) };
}

function tenths(ms: number): number {
  return Math.round(ms * 10) / 10;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench-wake: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
