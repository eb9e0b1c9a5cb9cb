/**
 * Start-up and exit of `petrel crawl`, side by side: builds given with --build (each a dist/ directory of
 * this repository, e.g. one built from main and one from a branch) crawl a three-page site on 127.0.0.1,
 * alternating run by run so that the machine's load falls on all alike. Per build, medians of:
 *   - spawn -> first request at the site (issue 10's goal: under 300 ms),
 *   - last response -> exit of `petrel crawl` (goal: within 200 ms),
 *   - with --strace: exec of `petrel crawl` -> exec of its first child (the queue server), that is the
 *     crawl process's own part of the start-up, from `strace -f --seccomp-bpf -e trace=execve`.
 *
 *   npm run build && node dist/scripts/bench-startup.js --build dist --build /tmp/main-dist --runs 9
 *
 * A build directory outside the repository needs node_modules beside or above it (the bundle loads
 * some packages through require at run time): copy it into the repository (e.g. ./dist-main).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const HELP = `usage: node dist/scripts/bench-startup.js [--build DIR]... [--runs N] [--strace]
  --build DIR   a dist/ directory holding cli/petrel.js (repeat to compare; default: this build)
  --runs N      crawls per build, alternating builds (default 7)
  --strace      also time the crawl process's own start (exec -> first child exec); needs strace`;

interface Run {
  readonly toFirstRequestMs: number;
  readonly lastResponseToExitMs: number;
  readonly toFirstChildMs: number | null;
}

const { values } = parseArgs({ options: { build: { type: 'string', multiple: true }, runs: { type: 'string', default: '7' }, strace: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } } });
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const builds = (values.build ?? [resolve(import.meta.dirname ?? '.', '..')]).map((dir) => resolve(dir));
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1 || runs > 1000) throw new Error(`--runs must be an integer from 1 to 1000, got ${values.runs}`);
for (const build of builds) if (!existsSync(join(build, 'cli', 'petrel.js'))) throw new Error(`${build} holds no cli/petrel.js: give a dist/ directory (npm run build makes one)`);
if (values.strace) execFileSync('strace', ['-V'], { stdio: 'ignore' });

// The site: a page linking to two more; no robots.txt (404). Times are taken where requests arrive.
let firstRequestAt: number | null = null;
let lastResponseAt = 0;
const site = createServer((request, response) => {
  firstRequestAt ??= performance.now();
  if (request.url === '/') response.writeHead(200, { 'content-type': 'text/html' }).end('<title>a</title><a href="/b">b</a> <a href="/c">c</a>');
  else if (request.url === '/b' || request.url === '/c') response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>${request.url}</title>`);
  else response.writeHead(404).end();
  response.on('finish', () => (lastResponseAt = performance.now()));
});
await new Promise<void>((done) => site.listen(0, '127.0.0.1', done));
const seed = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;

async function crawlOnce(build: string): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-startup-'));
  const trace = join(dir, 'trace');
  const crawl = [join(build, 'cli', 'petrel.js'), 'crawl', '--data', join(dir, 'data'), '--seed', seed, '--delay-ms', '0', '--no-progress', '--no-sitemaps'];
  const [command, args] = values.strace ? ['strace', ['-f', '--seccomp-bpf', '-ttt', '-s', '4096', '-e', 'trace=execve', '-o', trace, process.execPath, ...crawl]] : [process.execPath, crawl];
  firstRequestAt = null;
  const spawnedAt = performance.now();
  const child = spawn(command as string, args as string[], { stdio: 'ignore' });
  const status = await new Promise<number | null>((done) => child.on('exit', done));
  const exitedAt = performance.now();
  if (status !== 0 || firstRequestAt === null) throw new Error(`petrel crawl of ${build} exited with status ${status} (data kept in ${dir})`);
  let toFirstChildMs: number | null = null;
  if (values.strace) {
    const execs = readFileSync(trace, 'utf8')
      .split('\n')
      .filter((line) => line.includes('execve(') && line.includes('petrel.js') && !line.includes('= -1'))
      .map((line) => Number(line.trim().split(/\s+/)[1]));
    toFirstChildMs = (execs[1]! - execs[0]!) * 1000;
  }
  rmSync(dir, { recursive: true, force: true });
  return { toFirstRequestMs: firstRequestAt - spawnedAt, lastResponseToExitMs: exitedAt - lastResponseAt, toFirstChildMs };
}

const results = new Map(builds.map((build) => [build, [] as Run[]]));
for (let i = 0; i < runs; i++) for (const build of builds) results.get(build)!.push(await crawlOnce(build));
site.close();

const median = (xs: number[]) => Math.round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
for (const [build, list] of results) {
  console.log(
    JSON.stringify({
      build,
      runs: list.length,
      toFirstRequestMs: median(list.map((run) => run.toFirstRequestMs)),
      lastResponseToExitMs: median(list.map((run) => run.lastResponseToExitMs)),
      ...(values.strace ? { crawlProcessToFirstChildMs: median(list.map((run) => run.toFirstChildMs!)) } : {}),
      loadAverage: load,
    }),
  );
}
