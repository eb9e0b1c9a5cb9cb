/**
 * bench-inject: the queue server's memory and admission rate while it is handed many new URLs, and
 * nothing else (issue 18's figure: 1,000,000 URLs over 50,000 hosts through POST /api/control/inject in
 * batches of 1,000, no fetchers). A benchmark, not a test: it proves nothing by passing; read the figures.
 *
 * A real `petrel queue-server` process on a fresh data directory (scope `any`, one seed) is sent the
 * batches one after another over HTTP on loopback with the admin token. No URL is ever fetched: there
 * are no fetchers, and the host names are under `.test` (RFC 2606), resolved by nobody. Figures: RSS
 * (VmRSS from /proc/PID/status) after `listening` and after the last batch was answered (and again after
 * a forced GC through --expose-gc is not possible from outside, so after 2 s of quiet), peak RSS
 * (VmHWM), URLs admitted per second (wall time of the inject phase), and the seen-set's figures from
 * GET /api/status.
 *
 *   npm run build && node dist/scripts/bench-inject.js [--urls 1000000] [--hosts 50000] [--batch 1000] [--dist DIR] [--json]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const OWN_DIST = fileURLToPath(new URL('..', import.meta.url));

const USAGE = `Usage: node dist/scripts/bench-inject.js [options]

Starts a real petrel queue-server (no fetchers) on a fresh data directory, injects URLs through
POST /api/control/inject and prints its RSS before and after and the URLs admitted per second.

Options:
  --urls N     URLs injected (default 1000000)
  --hosts N    host names they are spread over (default 50000)
  --batch N    URLs per inject request (default 1000, the route's maximum)
  --parallel N inject requests in flight at once (default 4; an inject is answered after its group
               commit, at most every 100 ms, so one request at a time admits at most 10 batches a second)
  --dist DIR   the Petrel build to run (a dist/ directory; default: the one holding this script)
  --profile D  run the queue server under node --cpu-prof, the profile written into directory D
  --keep       keep the data directory
  --json       print the report as JSON only
  --help       show this help
`;

function kib(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

const mib = (k: number | null): number | null => (k === null ? null : Math.round((k / 1024) * 10) / 10);

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      urls: { type: 'string', default: '1000000' },
      hosts: { type: 'string', default: '50000' },
      batch: { type: 'string', default: '1000' },
      parallel: { type: 'string', default: '4' },
      dist: { type: 'string', default: OWN_DIST },
      profile: { type: 'string' },
      keep: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const urls = Number(values.urls);
  const hosts = Number(values.hosts);
  const batchSize = Number(values.batch);
  const log = (text: string): void => {
    if (!values.json) process.stderr.write(`${text}\n`);
  };
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-inject-'));
  const data = join(dir, 'data');
  const args = [...(values.profile !== undefined ? ['--cpu-prof', '--cpu-prof-dir', values.profile] : []), join(values.dist, 'cli/petrel.js'), 'queue-server', '--data', data, '--port', '0', '--host', '127.0.0.1', '--scope', 'any', '--seed', 'http://seed.bench-inject.test/'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = await new Promise<Record<string, unknown> | null>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const event = JSON.parse(line) as Record<string, unknown>;
        if (event.event === 'listening') resolve(event);
      } catch {
        // not an event line
      }
    });
    void exited.then(() => resolve(null));
  });
  if (listening === null) {
    process.stderr.write(`bench-inject: the queue server exited before listening:\n${stderr}\n`);
    return 1;
  }
  const pid = Number(listening.pid);
  const base = String(listening.url);
  const admin = readFileSync(String(listening.adminTokenFile), 'utf8').trim();
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const rssBefore = kib(pid, 'VmRSS');
  log(`bench-inject: ${urls.toLocaleString('en-US')} URLs over ${hosts.toLocaleString('en-US')} hosts in batches of ${batchSize}; RSS at start ${mib(rssBefore)} MiB`);
  let admitted = 0;
  let rejected = 0;
  const started = performance.now();
  const parallel = Number(values.parallel);
  let next = 0;
  let reported = 0;
  const sender = async (): Promise<void> => {
    while (next < urls) {
      const sent = next;
      next += batchSize;
      const batch: string[] = [];
      for (let i = sent; i < Math.min(urls, sent + batchSize); i++) batch.push(`http://h${(i * 7919) % hosts}.bench-inject.test/p/${i}`);
      const response = await fetch(`${base}/api/control/inject`, { method: 'POST', headers, body: JSON.stringify({ urls: batch }) });
      if (!response.ok) throw new Error(`inject answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      const body = (await response.json()) as { admitted: number; rejected: unknown[] };
      admitted += body.admitted;
      rejected += body.rejected.length;
      if (admitted + rejected >= reported + 100_000) {
        reported += 100_000;
        log(`  ${reported.toLocaleString('en-US')} answered, RSS ${mib(kib(pid, 'VmRSS'))} MiB, ${Math.round(reported / ((performance.now() - started) / 1000))} URLs/s`);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, sender));
  const seconds = (performance.now() - started) / 1000;
  const rssAfter = kib(pid, 'VmRSS');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const rssSettled = kib(pid, 'VmRSS');
  const peak = kib(pid, 'VmHWM');
  const status = (await (await fetch(`${base}/api/status`, { headers })).json()) as Record<string, unknown>;
  child.kill('SIGTERM');
  await exited;
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
  const report = {
    urls,
    hosts,
    batch: batchSize,
    parallel,
    admitted,
    rejected,
    seconds: Math.round(seconds * 10) / 10,
    urlsPerSecond: Math.round(admitted / seconds),
    rssMiB: { start: mib(rssBefore), afterInject: mib(rssAfter), after2s: mib(rssSettled), peak: mib(peak) },
    seenSet: status.seenSet ?? null,
    dist: values.dist,
    ...(values.keep ? { dataDir: data } : {}),
  };
  process.stdout.write(`${JSON.stringify(report, null, values.json ? 0 : 2)}\n`);
  return 0;
}

process.exitCode = await main();
