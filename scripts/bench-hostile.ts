/**
 * bench-hostile: one real `petrel crawl` of the test web's hostile host (scripts/test-web/hostile/),
 * measured. A benchmark, not a test: it prints wall time, requests, errors by code, statuses, and the
 * peak RSS (VmHWM) of every process of the crawl's tree, then checks the guarantees of issue 6:
 *
 *   - the whole fleet (the crawl command, its queue server and fetchers) peaks under 1 GiB in all;
 *   - the crawl ends within MAX_WALL_MS;
 *   - the path robots.txt disallows (its first rule, in a 600 KiB file) is never requested.
 *
 * Exit status 1 when one of them fails. Linux only (/proc).
 *
 *   npm run build && node dist/scripts/bench-hostile.js [--timeout-ms 10000] [--fetchers 2] [--keep]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startTestWeb } from './test-web.js';
import { DISALLOWED_PREFIX } from './test-web/hostile/cases.js';

const PETREL = fileURLToPath(new URL('../cli/petrel.js', import.meta.url));
const FLEET_RSS_BOUND_BYTES = 1024 * 1024 * 1024;
const MAX_WALL_MS = 5 * 60_000;
const SAMPLE_MS = 100;

interface ProcessPeak {
  pid: number;
  argv: string[];
  peakKb: number;
}

const USAGE = `Usage: node dist/scripts/bench-hostile.js [--timeout-ms N] [--fetchers N] [--keep]

Crawls the test web's hostile host with a real petrel crawl (scope host, depth 6, no delay, 4 requests
at a time, 3 retries from 200 ms), samples the peak RSS of every process of the crawl every ${SAMPLE_MS} ms,
prints wall time, requests, errorsByCode and the peaks, and fails when the fleet peaks over 1 GiB, the
crawl takes over ${MAX_WALL_MS / 60_000} minutes, or robots.txt's disallowed path is requested.
  --timeout-ms N   total time one request may take (default 10000)
  --fetchers N     fetcher processes (default 2)
  --keep           keep the data directory
`;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { 'timeout-ms': { type: 'string' }, fetchers: { type: 'string' }, keep: { type: 'boolean' }, help: { type: 'boolean' } } });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return 0;
  }
  const timeoutMs = values['timeout-ms'] ?? '10000';
  const fetchers = values.fetchers ?? '2';
  const web = await startTestWeb({ pagesPerHost: 5 });
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-hostile-'));
  const summaryFile = join(dir, 'summary.json');
  const seed = `${web.hostile.origin}/index.html`;
  const args = [
    PETREL, 'crawl', '--seed', seed, '--data', join(dir, 'data'), '--scope', 'host', '--max-depth', '6', '--delay-ms', '0',
    '--host-concurrency', '4', '--max-retries', '3', '--retry-base-ms', '200', '--timeout-ms', timeoutMs, '--fetchers', fetchers,
    '--summary-json', summaryFile, '--no-progress',
  ];
  process.stderr.write(`bench-hostile: crawling ${seed}\n`);
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const peaks = new Map<number, ProcessPeak>();
  const sample = (): void => {
    for (const pid of processTree(child.pid ?? -1)) {
      const peakKb = vmHwmKb(pid);
      if (peakKb === null) continue;
      const known = peaks.get(pid);
      peaks.set(pid, { pid, argv: known?.argv.length ? known.argv : argvOf(pid), peakKb: Math.max(known?.peakKb ?? 0, peakKb) });
    }
  };
  const sampler = setInterval(sample, SAMPLE_MS);
  const killer = setTimeout(() => child.kill('SIGKILL'), MAX_WALL_MS + 60_000);
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  clearInterval(sampler);
  clearTimeout(killer);
  const wallMs = Math.round(performance.now() - started);
  const log = [...web.log];
  await web.close();

  let summary: Record<string, unknown> = {};
  try {
    summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Record<string, unknown>;
  } catch {
    process.stderr.write(`bench-hostile: no summary (exit ${exit.code ?? exit.signal}); crawl stderr:\n${stderr}\n`);
  }
  const fleetKb = [...peaks.values()].reduce((sum, peak) => sum + peak.peakKb, 0);
  const disallowed = log.filter((entry) => entry.host === web.hostile.authority && entry.path.startsWith(DISALLOWED_PREFIX));
  const hostileRequests = log.filter((entry) => entry.host === web.hostile.authority);
  const report = {
    wallMs,
    exit: exit.code ?? exit.signal,
    requests: summary.requests,
    requestsSeenByHost: hostileRequests.length,
    trapRequests: hostileRequests.filter((entry) => entry.path.startsWith('/trap/')).length,
    pagesFetched: summary.pagesFetched,
    errors: summary.errors,
    errorsByCode: summary.errorsByCode,
    byStatus: summary.byStatus,
    disallowedRequests: disallowed.length,
    peakRssMiB: [...peaks.values()].map((peak) => ({ pid: peak.pid, role: roleOf(peak.argv), mib: Math.round(peak.peakKb / 1024) })),
    fleetPeakRssMiB: Math.round(fleetKb / 1024),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (values.keep === true) process.stderr.write(`bench-hostile: data kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });

  const failures: string[] = [];
  if (exit.code !== 0) failures.push(`the crawl exited with ${exit.code ?? exit.signal}`);
  if (fleetKb * 1024 >= FLEET_RSS_BOUND_BYTES) failures.push(`the fleet peaked at ${Math.round(fleetKb / 1024)} MiB, over 1 GiB`);
  if (wallMs > MAX_WALL_MS) failures.push(`the crawl took ${wallMs} ms, over ${MAX_WALL_MS} ms`);
  if (disallowed.length > 0) failures.push(`robots.txt's disallowed ${DISALLOWED_PREFIX} was requested ${disallowed.length} times`);
  for (const failure of failures) process.stderr.write(`bench-hostile: FAIL: ${failure}\n`);
  return failures.length === 0 ? 0 : 1;
}

/** The root and every descendant, through /proc/<pid>/task/<tid>/children. */
function processTree(root: number): number[] {
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    out.push(pid);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        for (const text of readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').trim().split(' ')) if (text !== '') stack.push(Number(text));
      } catch {
        // the thread ended between readdir and read
      }
    }
  }
  return out;
}

/** The process's own peak resident set (kept by the kernel, so sampling only has to catch it alive). */
function vmHwmKb(pid: number): number | null {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '').split('\0');
  } catch {
    return [];
  }
}

function roleOf(argv: readonly string[]): string {
  const command = argv.find((arg) => ['crawl', 'queue-server', 'fetcher'].includes(arg));
  return command ?? argv.slice(1, 3).join(' ');
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`bench-hostile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
