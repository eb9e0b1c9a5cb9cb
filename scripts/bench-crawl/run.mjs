/**
 * Crawl benchmark (not a test): Petrel, Crawlee's CheerioCrawler and `wget -r`, one after another, on the
 * same generated test web served by a separate process on 127.0.0.2.. . For each: wall time, pages got
 * (the crawler's own count and the server's log), pages/s, CPU seconds of the whole process tree, and
 * peak RSS of every process in it. Writes out/latest.json. See README.md.
 *
 *   cd scripts/bench-crawl && npm ci && node run.mjs [--pages 10000] [--hosts 5] [--profile]
 *
 * Steps:
 *   1. check the prerequisites (Petrel built, wget and GNU time installed);
 *   2. start the test web (web.mjs) and learn its origins and the number of reachable pages;
 *   3. for each crawler: clear the server's log, run it under GNU time and the /proc sampler, tally the
 *      server's log, and check the crawler got every page;
 *   4. print the table and the ratios, write out/latest.json;
 *   5. with --profile, run Petrel again under V8's CPU profiler (the equivalent of --cpu-prof, through a
 *      preload) and print the top functions of each process.
 */
import { fork, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { selfTimes } from './lib/cpuprofile.mjs';
import { measure } from './lib/measure.mjs';
import { PEERS, petrel, petrelCli } from './lib/peers.mjs';
import { formatProfile, formatRatios, formatTable, ratios, resultRow } from './lib/report.mjs';

const USAGE = `Usage: node run.mjs [options]

Runs Petrel, Crawlee (CheerioCrawler) and wget -r one after another on the same test web and compares them.

Options:
  --pages N          pages in the test web, all hosts together (default 10000)
  --hosts N          test-web hosts, 127.0.0.2 and up (default 5)
  --concurrency N    requests at once per crawler: Petrel --host-concurrency, Crawlee maxConcurrency (default 16)
  --fetchers N       Petrel fetcher processes (default 2)
  --only LIST        comma-separated subset of: ${PEERS.map((p) => p.name).join(',')} (default: all)
  --repeat N         run each crawler N times, interleaved; the table shows each one's cleanest run (least
                     CPU used by everything else on the machine), the JSON keeps every run (default 1)
  --profile          afterwards, run Petrel once more under the CPU profiler (like --cpu-prof) and print
                     each process's top functions; .cpuprofile files go to out/profile/
  --top N            functions per process in the profile (default 15)
  --timeout-s N      give up on one crawler after this long (default 1800)
  --petrel-root DIR  the Petrel checkout whose dist/ is benchmarked (default: the one holding this script),
                     e.g. to compare a branch built elsewhere
  --help             show this help
`;

const here = dirname(fileURLToPath(import.meta.url));
const ownRoot = resolve(here, '..', '..');
const outDir = join(here, 'out');

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: '10000' },
    hosts: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    fetchers: { type: 'string', default: '2' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    top: { type: 'string', default: '15' },
    repeat: { type: 'string', default: '1' },
    'timeout-s': { type: 'string', default: '1800' },
    'petrel-root': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
/** Petrel's checkout (its dist/cli/petrel.js); the test web always comes from this script's own. */
const root = values['petrel-root'] === undefined ? ownRoot : resolve(values['petrel-root']);
const options = {
  pages: positive('--pages', values.pages),
  hosts: positive('--hosts', values.hosts),
  concurrency: positive('--concurrency', values.concurrency),
  fetchers: positive('--fetchers', values.fetchers),
  top: positive('--top', values.top),
  repeat: positive('--repeat', values.repeat),
  timeoutMs: positive('--timeout-s', values['timeout-s']) * 1000,
  profile: values.profile,
};
const peers = values.only === undefined ? PEERS : values.only.split(',').map((name) => PEERS.find((p) => p.name === name.trim()) ?? usage(`unknown crawler in --only: ${name}`));
const pagesPerHost = Math.round(options.pages / options.hosts);

// 1. Prerequisites, and a private copy of Petrel's build: the tree is shared, and a `npm run build`
// elsewhere (which starts with rm -rf dist) must not pull modules from under a running crawl.
checkPrerequisites();
mkdirSync(outDir, { recursive: true });
const scratch = mkdtempSync(join(tmpdir(), 'petrel-bench-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
const petrelBuild = { root, commit: gitDescribe(root) };
const petrelRoot = snapshotPetrel(root, join(scratch, 'petrel'));
say(`Petrel: ${root} at ${petrelBuild.commit ?? 'unknown commit'}, dist/ copied to ${petrelRoot}`);

// 2. The test web.
const web = await startWeb(pagesPerHost, options.hosts);
say(`test web: ${web.origins.length} hosts × ${pagesPerHost} pages = ${web.expected} reachable pages, port ${web.port}`);
if (web.expected !== pagesPerHost * options.hosts) say(`warning: expected ${pagesPerHost * options.hosts} reachable pages, the model says ${web.expected}`);

// 3. The crawlers, one after another.
const allRuns = [];
try {
  await web.tally(); // start from an empty log
  for (let round = 1; round <= options.repeat; round++) {
    for (const peer of peers) {
      const { row } = await runPeer(peer, {});
      row.round = round;
      allRuns.push(row);
    }
  }
  // On a shared machine the cleanest run is the least disturbed one, not the luckiest.
  const rows = peers.map((peer) => allRuns.filter((row) => row.name === peer.name).sort((a, b) => a.otherCpuS - b.otherCpuS)[0]);
  if (options.repeat > 1) say(`\nEach crawler's cleanest of ${options.repeat} runs (least CPU used by everything else): ${rows.map((r) => `${r.label} run ${r.round}`).join(', ')}`);

  // 4. Results.
  const ratioTable = ratios(rows);
  say(`\n${formatTable(rows)}`);
  if (Object.keys(ratioTable).length > 0) say(`\nRatios (Petrel ÷ peer; pages/s above 1 = Petrel faster, CPU ms/page below 1 = Petrel cheaper):\n${formatRatios(ratioTable)}`);

  // 5. Profile.
  let profile = null;
  if (options.profile) profile = await profilePetrel();

  const report = {
    createdAt: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, node: process.version, wget: wgetVersion(), crawlee: crawleeVersion(), loadAverageAtEnd: loadavg() },
    options: { ...options, pagesPerHost, peers: peers.map((p) => p.name) },
    petrel: petrelBuild,
    web: { port: web.port, origins: web.origins, expectedPages: web.expected },
    results: rows,
    ratios: ratioTable,
    allRuns,
    profile,
  };
  // latest.json is overwritten; the dated copy keeps earlier runs for comparison.
  const text = `${JSON.stringify(report, null, 2)}\n`;
  const dated = join(outDir, `run-${report.createdAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(join(outDir, 'latest.json'), text);
  writeFileSync(dated, text);
  say(`\nwrote ${join(outDir, 'latest.json')} (and ${dated})`);
} finally {
  await web.close();
}

/** Runs one crawler on the web and returns its result row. */
async function runPeer(peer, { extraEnv, label }) {
  const dir = mkdtempSync(join(scratch, `${peer.name}-`));
  const ctx = { origins: web.origins, seeds: web.seeds, hostConcurrency: options.concurrency, fetchers: options.fetchers, root: petrelRoot, here, dir, logDir: outDir, extraEnv };
  const { argv, env, cwd } = peer.command(ctx);
  const logName = label === undefined ? peer.name : `${peer.name}-${label}`;
  say(`\n${peer.label}${label === undefined ? '' : ` (${label})`}: ${argv.map(shellQuote).join(' ')}`);
  const measured = await measure({
    argv,
    env,
    cwd,
    stdoutFile: join(outDir, `${logName}.stdout.log`),
    stderrFile: join(outDir, `${logName}.stderr.log`),
    timeFile: join(dir, 'time.txt'),
    timeoutMs: options.timeoutMs,
  });
  const tally = await web.tally();
  const own = peer.ownCount(ctx);
  const row = resultRow(peer, own, tally, measured, web.expected);
  if (label !== undefined) row.label = `${row.label} (${label})`;
  row.command = argv;
  say(`  ${row.distinctPages} pages in ${row.wallS.toFixed(2)} s = ${row.pagesPerSecond.toFixed(0)} pages/s, CPU ${row.cpuS.toFixed(2)} s (everything else on the machine: ${row.otherCpuS.toFixed(1)} s)` + (row.problems.length > 0 ? `; CHECK: ${row.problems.join('; ')}` : ''));
  if (measured.exitCode !== 0) say(`  stderr tail (${join(outDir, `${logName}.stderr.log`)}):\n${tail(join(outDir, `${logName}.stderr.log`), 10)}`);
  rmSync(dir, { recursive: true, force: true });
  return { row, measured };
}

/** Petrel again under the CPU profiler; profiles are kept in out/profile/ for DevTools. */
async function profilePetrel() {
  const profileDir = join(outDir, 'profile');
  rmSync(profileDir, { recursive: true, force: true });
  mkdirSync(profileDir, { recursive: true });
  // Node 20 refuses --cpu-prof in NODE_OPTIONS; the preload does the same through the inspector.
  const preload = pathToFileURL(join(here, 'lib', 'cpu-prof-preload.mjs')).href;
  const nodeOptions = [process.env.NODE_OPTIONS ?? '', `--import=${preload}`].join(' ').trim();
  const extraEnv = { NODE_OPTIONS: nodeOptions, PETREL_BENCH_CPU_PROF_DIR: profileDir };
  const { row, measured } = await runPeer(petrel, { extraEnv, label: 'profiled' });
  const roleByPid = new Map(measured.processes.map((record) => [record.pid, petrel.role(record.argv)]));
  const processes = [];
  for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
    const pid = Number(/^pid-(\d+)\.cpuprofile$/.exec(file)?.[1]);
    const summary = selfTimes(JSON.parse(readFileSync(join(profileDir, file), 'utf8')));
    processes.push({ pid, role: roleByPid.get(pid) ?? `pid ${pid}`, file: join('out', 'profile', file), totalMs: summary.totalMs, functions: summary.functions.slice(0, 50), modules: summary.files.slice(0, 20) });
  }
  const order = (role) => (role === 'queue-server' ? 0 : role.startsWith('fetcher') ? 1 : 2);
  processes.sort((a, b) => order(a.role) - order(b.role) || a.role.localeCompare(b.role));
  say(`\nProfile (self time per function; the profiled run costs more than a plain one):`);
  for (const p of processes) say(`\n${formatProfile(`${p.role} (pid ${p.pid})`, { totalMs: p.totalMs, functions: p.functions, files: p.modules }, p.role.startsWith('crawl') ? 5 : options.top)}`);
  return { run: row, processes };
}

/** Forks web.mjs and wraps its IPC: tally() returns the counts since the last tally, close() stops it. */
async function startWeb(perHost, hosts) {
  const child = fork(join(here, 'web.mjs'), [String(perHost), String(hosts)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = (type) =>
    new Promise((resolveMessage, reject) => {
      const onMessage = (message) => {
        if (message?.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolveMessage(message);
      };
      const onExit = (code) => reject(new Error(`the test web exited (status ${code}) before answering '${type}'`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next('ready');
  return {
    ...ready,
    async tally() {
      const answer = next('tally');
      child.send({ type: 'tally' });
      return answer;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'close' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGTERM');
    },
  };
}

function checkPrerequisites() {
  const missing = [];
  for (const [dir, file] of [[root, petrelCli(root)], [ownRoot, join(ownRoot, 'dist', 'scripts', 'test-web.js')]]) {
    if (!existsSync(file)) missing.push(`${file} (run \`npm run build\` in ${dir})`);
  }
  if (!existsSync('/usr/bin/time')) missing.push('/usr/bin/time (apt-get install -y time)');
  if (peers.some((p) => p.name === 'wget') && spawnSync('wget', ['--version']).status !== 0) missing.push('wget (apt-get install -y wget)');
  if (peers.some((p) => p.name === 'crawlee') && !existsSync(join(here, 'node_modules', '@crawlee', 'cheerio'))) missing.push('@crawlee/cheerio (run `npm ci` in scripts/bench-crawl)');
  if (missing.length === 0 && peers.some((p) => p.name === 'petrel')) {
    // Fail here, not after the test web is up, if the build is broken (e.g. a missing module).
    const check = spawnSync(process.execPath, [petrelCli(root), 'crawl', '--help'], { encoding: 'utf8' });
    if (check.status !== 0) missing.push(`a working Petrel build: \`petrel crawl --help\` failed:\n${check.stderr.split('\n').slice(0, 6).join('\n')}`);
  }
  if (missing.length > 0) usage(`missing:\n  ${missing.join('\n  ')}`);
}

/** Copies dist/ and package.json (read for --version) to `to`, with node_modules linked back. */
function snapshotPetrel(from, to) {
  mkdirSync(to, { recursive: true });
  cpSync(join(from, 'dist'), join(to, 'dist'), { recursive: true });
  cpSync(join(from, 'package.json'), join(to, 'package.json'));
  symlinkSync(join(from, 'node_modules'), join(to, 'node_modules'));
  return to;
}

/** "abc1234" or "abc1234+dirty" (uncommitted changes in the tree the build came from), null outside git. */
function gitDescribe(dir) {
  const head = spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0) return null;
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return `${head.stdout.trim()}${dirty.stdout.trim() === '' ? '' : '+dirty'}`;
}

function wgetVersion() {
  const out = spawnSync('wget', ['--version'], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.split('\n')[0] : null;
}

function crawleeVersion() {
  const file = join(here, 'node_modules', '@crawlee', 'cheerio', 'package.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : null;
}

function tail(file, lines) {
  return existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n') : '    (none)';
}

function shellQuote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function positive(flag, text) {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) usage(`${flag} expects a positive integer, got ${text}`);
  return value;
}

function usage(message) {
  process.stderr.write(`bench-crawl: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function say(text) {
  process.stdout.write(`${text}\n`);
}
