/**
 * bench-queue-server inject: what admitting URLs costs a queue server with no fetchers. A real
 * `petrel queue-server` (scope any, continuous mode, one seed whose robots.txt nobody claims) is
 * handed --urls new URLs over --hosts hosts of the graph model (127.1.0.0 and up, never contacted)
 * through POST /api/control/inject, --batch at a time, --in-flight requests at once (an inject is
 * answered after its group commit, so one request at a time waits a commit window each). Prints a JSON line
 * every 100 batches and a summary: RSS before and after (and after --settle-s more seconds), URLs
 * admitted per second, the queue server's CPU, the driver's own.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { inject } from './admin-api.js';
import { profilesIn, topSelfTimes } from './cpu-profile.js';
import { GraphModel, MAX_HOST_PAGES, MAX_HOSTS } from './graph-model.js';
import { cpuOf, memoryOf } from './proc.js';
import { spawnQueueServer } from './queue-server-process.js';
import { intOption } from './int-option.js';

export const INJECT_USAGE = `Usage: node dist/scripts/bench-queue-server.js inject [options]

Injects new URLs into a real petrel queue-server with no fetchers through POST /api/control/inject and
prints its RSS before and after and the URLs admitted per second.

Options:
  --urls N       URLs in all (default 1000000)
  --hosts N      hosts they are spread over, round robin (default 50000; URLs per host at most 2047)
  --batch N      URLs per request (default 1000, the route's bound)
  --in-flight N  requests open at once (default 1: one after the other; each is answered after the
                 group commit, at most every 100 ms, so more in flight share a commit)
  --settle-s N   seconds to wait after the last inject before reading RSS again (default 5)
  --qs-arg ARG   an argument for the queue server's command line, e.g. --qs-arg=--heap-growth=50
                 (repeat it for more)
  --profile      the queue server runs under node --cpu-prof; prints its top functions
  --top N        functions in the profile (default 30)
  --dist DIR     the Petrel build to run (default: the one holding this script)
  --keep         keep the data directory
  --help         show this help
`;

const emit = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const mib = (kib: number | undefined): number | null => (kib === undefined ? null : Math.round(kib / 1024));

export async function runInject(argv: string[], ownDist: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      urls: { type: 'string', default: '1000000' },
      hosts: { type: 'string', default: '50000' },
      batch: { type: 'string', default: '1000' },
      'in-flight': { type: 'string', default: '1' },
      'settle-s': { type: 'string', default: '5' },
      'qs-arg': { type: 'string', multiple: true, default: [] },
      profile: { type: 'boolean', default: false },
      top: { type: 'string', default: '30' },
      dist: { type: 'string', default: ownDist },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(INJECT_USAGE);
    return 0;
  }
  const int = intOption;
  const hosts = int('hosts', values.hosts, 1, MAX_HOSTS - 1);
  const urls = int('urls', values.urls, 1, hosts * (MAX_HOST_PAGES - 1));
  const batch = int('batch', values.batch, 1, 1000);
  const inFlight = int('in-flight', values['in-flight'], 1, 64);
  const settleS = int('settle-s', values['settle-s'], 0, 600);
  const top = int('top', values.top, 1, 1000);
  const qsArgs = values['qs-arg'];
  // Every host of the model has MAX_HOST_PAGES - 1 pages here: the inject does not follow its graph.
  const model = new GraphModel({ hosts: hosts + 1, links: 1, newLinks: 0, crossLinks: 0, seed: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-inject-'));
  const profileDir = join(dir, 'profile');
  if (values.profile) mkdirSync(profileDir);
  // The seed is a host of its own, after the injected ones: inject adds to a crawl, so there is one.
  const seed = `${model.origins[hosts]!}/`;
  const server = spawnQueueServer(values.dist, ['--data', join(dir, 'data'), '--port', '0', '--scope', 'any', '--delay-ms', '0', '--seed', seed, ...qsArgs], values.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []);
  const listening = await server.listening;
  if (listening === null) {
    process.stderr.write(`bench-queue-server inject: the queue server exited before listening:\n${server.stderr()}\n`);
    return 1;
  }
  const pid = listening.pid;
  const adminToken = readFileSync(listening.adminTokenFile, 'utf8').trim();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = memoryOf(pid);
  const cpu0 = cpuOf(pid)!;
  const driver0 = process.cpuUsage();
  emit({ event: 'start', date: new Date().toISOString(), machine: { cpus: cpus().length, loadavg: loadavg() }, urls, hosts, batch, inFlight, rssBeforeMiB: mib(before?.rssKib) });
  const started = performance.now();
  let admitted = 0;
  const rejectedByCode: Record<string, number> = {};
  let windowStart = started;
  let windowAdmitted = 0;
  let nextAt = 0;
  let done = 0;
  let round = 0;
  // Each worker takes the next batch; URL i: host i mod hosts, page 1 + i div hosts (so each request spans `batch` hosts).
  const worker = async (): Promise<void> => {
    while (nextAt < urls) {
      const at = nextAt;
      const size = Math.min(batch, urls - at);
      nextAt += size;
      const list: string[] = new Array(size);
      for (let k = 0; k < size; k++) list[k] = model.url(((at + k) % hosts) * MAX_HOST_PAGES + 1 + Math.floor((at + k) / hosts));
      const answer = await inject(listening.url, adminToken, list);
      admitted += answer.admitted;
      windowAdmitted += answer.admitted;
      done += size;
      for (const refusal of answer.rejected) rejectedByCode[refusal.code] = (rejectedByCode[refusal.code] ?? 0) + 1;
      if (++round % 100 === 0 || done >= urls) {
        const now = performance.now();
        emit({ event: 'progress', injected: done, admitted, admittedPerSecond: Math.round(windowAdmitted / ((now - windowStart) / 1000)), rssMiB: mib(memoryOf(pid)?.rssKib) });
        windowStart = now;
        windowAdmitted = 0;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, () => worker()));
  const seconds = (performance.now() - started) / 1000;
  const cpu1 = cpuOf(pid)!;
  const driver = process.cpuUsage(driver0);
  const after = memoryOf(pid);
  await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
  const settled = memoryOf(pid);
  server.child.kill('SIGTERM');
  const exit = await server.exited;
  const profile = values.profile ? (profilesIn(profileDir).map((file) => topSelfTimes(file, top))[0] ?? []) : null;
  emit({
    event: 'summary',
    urls,
    hosts,
    batch,
    inFlight,
    qsArgs,
    admitted,
    rejectedByCode,
    seconds: Math.round(seconds * 10) / 10,
    admittedPerSecond: Math.round(admitted / seconds),
    rssBeforeMiB: mib(before?.rssKib),
    rssAfterMiB: mib(after?.rssKib),
    rssSettledMiB: mib(settled?.rssKib),
    peakRssMiB: mib(settled?.peakKib),
    bytesPerUrl: before === null || settled === null ? null : Math.round(((settled.rssKib - before.rssKib) * 1024) / Math.max(1, admitted)),
    queueServerCpuMs: Math.round(cpu1.user + cpu1.system - cpu0.user - cpu0.system),
    driverCpuMs: Math.round((driver.user + driver.system) / 1000),
    exit,
    profile,
    loadavg: loadavg(),
  });
  if (values.keep) process.stderr.write(`bench-queue-server inject: kept ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
  return exit === 0 ? 0 : 1;
}
