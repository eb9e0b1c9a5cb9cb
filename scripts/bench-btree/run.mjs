/**
 * B-Tree benchmark (not a test): Petrel's B-Tree against SQLite and LMDB on the same workload, each in
 * its own process, one after another: N puts of 8-byte keys with 100-byte values in durable commits of
 * --batch keys, then (after a reopen) N look-ups in random order, a full ordered scan, and the size of
 * the files. Prints a table, the ratios and issue 10's goals; writes out/latest.json. See README.md.
 *
 *   npm run build                                   # in the repository root: the B-Tree under test
 *   cd scripts/bench-btree && npm ci && node run.mjs [--keys 1000000] [--json]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ENGINE_NAMES } from './lib/engines.mjs';
import { topSelfTimes } from './lib/profile.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));

const USAGE = `Usage: node run.mjs [options]

Petrel's B-Tree against SQLite (better-sqlite3, WITHOUT ROWID) and LMDB (lmdb-js) on the same 8-byte keys
and 100-byte values, each in its own process, one after another, each in a fresh directory:
  put    N keys in random key order, in durable commits of --batch keys (each commit survives a power loss)
  get    after closing and reopening: N look-ups in random order, every value checked
  scan   every entry in key order, order and count checked
  size   bytes of every file the engine keeps, after close
Same page size (4 KiB) for all; the same cache budget for the two engines that have a cache (LMDB reads
its memory map: the OS page cache is its cache). What "durable" means for each: lib/engines.mjs.

Options:
  --keys N              keys (default 1000000)
  --batch N             keys per durable commit (default 1000)
  --gets N              random look-ups (default: --keys)
  --only LIST           comma-separated subset of ${ENGINE_NAMES.join(',')} (default: all)
  --cache-kib N         page cache of the B-Tree and of SQLite, KiB (default 8192: the queue server's
                        cache.btree budget, 2,048 pages of 4 KiB)
  --sqlite-journal M    wal (default) or delete (the rollback journal); synchronous=FULL either way
  --dir DIR             where the temporary directories go (default: the OS temp dir); the disk matters,
                        since every commit waits for fsync
  --repeat N            run every engine N times, interleaved; the table shows each engine's least disturbed
                        run (least wall time over put, get and scan), the JSON keeps every run (default 1)
  --profile             run each engine under node --cpu-prof and print its top functions by self time;
                        profiles go to out/profile/
  --top N               functions per profile (default 15)
  --petrel-root DIR     the Petrel checkout whose dist/ is benchmarked (default: the one holding this script)
  --json                print the results as JSON only (out/latest.json gets them either way)
  --help                show this help
`;

const { values: opts } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    batch: { type: 'string', default: '1000' },
    gets: { type: 'string' },
    only: { type: 'string' },
    'cache-kib': { type: 'string', default: '8192' },
    'sqlite-journal': { type: 'string', default: 'wal' },
    dir: { type: 'string', default: tmpdir() },
    profile: { type: 'boolean', default: false },
    top: { type: 'string', default: '15' },
    repeat: { type: 'string', default: '1' },
    'petrel-root': { type: 'string', default: resolve(HERE, '../..') },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (opts.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

function positiveInt(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got ${text}`);
  return n;
}
function fail(message) {
  process.stderr.write(`bench-btree: ${message}\n`);
  process.exit(2);
}

const keys = positiveInt('keys', opts.keys);
if (keys >= 2 ** 32) fail('--keys must be below 2^32');
const batch = positiveInt('batch', opts.batch);
const gets = opts.gets === undefined ? keys : positiveInt('gets', opts.gets);
const cacheKib = positiveInt('cache-kib', opts['cache-kib']);
const top = positiveInt('top', opts.top);
const repeat = positiveInt('repeat', opts.repeat);
const sqliteJournal = opts['sqlite-journal'];
if (!['wal', 'delete'].includes(sqliteJournal)) fail(`--sqlite-journal must be wal or delete, got ${sqliteJournal}`);
const engines = opts.only === undefined ? ENGINE_NAMES : opts.only.split(',').map((s) => s.trim());
for (const e of engines) if (!ENGINE_NAMES.includes(e)) fail(`unknown engine ${e} (choose from ${ENGINE_NAMES.join(',')})`);
const petrelRoot = resolve(opts['petrel-root']);
if (engines.includes('btree') && !existsSync(join(petrelRoot, 'dist/queue-server/btree/index.js'))) {
  fail(`no build at ${petrelRoot}/dist: run npm run build there first`);
}
if (!existsSync(join(HERE, 'node_modules/better-sqlite3')) || !existsSync(join(HERE, 'node_modules/lmdb'))) {
  fail('the peers are not installed: run npm ci in scripts/bench-btree first');
}

const log = (text) => {
  if (!opts.json) process.stderr.write(`${text}\n`);
};
const outDir = join(HERE, 'out');
const profileDir = join(outDir, 'profile');
if (opts.profile) {
  rmSync(profileDir, { recursive: true, force: true });
  mkdirSync(profileDir, { recursive: true });
}

const runs = [];
for (let round = 1; round <= repeat; round++) for (const engine of engines) runs.push(runEngine(engine, round));
const totalWall = (r) => r.put.wallMs + r.get.wallMs + r.scan.wallMs;
const results = engines.map((engine) => runs.filter((r) => r.engine === engine).sort((a, b) => totalWall(a) - totalWall(b))[0]);

function runEngine(engine, round) {
  const dir = mkdtempSync(join(opts.dir, `bench-btree-${engine}-`));
  try {
    const loadBefore = loadavg()[0];
    log(`${engine}${repeat > 1 ? ` (run ${round} of ${repeat})` : ''}: ${keys.toLocaleString('en-US')} keys in commits of ${batch}, ${gets.toLocaleString('en-US')} gets, in ${dir}, load ${loadBefore.toFixed(2)} ...`);
    const nodeArgs = opts.profile ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, `${engine}-${round}`)] : [];
    const child = spawnSync(
      process.execPath,
      [...nodeArgs, join(HERE, 'lib/worker.mjs'), JSON.stringify({ engine, dir, keys, batch, gets, cacheKib, sqliteJournal, petrelRoot })],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 },
    );
    if (child.status !== 0) fail(`${engine} failed (exit ${child.status ?? child.signal})`);
    const result = { ...JSON.parse(child.stdout), round, loadBefore, loadAfter: loadavg()[0] };
    if (opts.profile) {
      const files = readdirSync(join(profileDir, `${engine}-${round}`)).filter((f) => f.endsWith('.cpuprofile'));
      result.profile = files.length === 0 ? [] : topSelfTimes(join(profileDir, `${engine}-${round}`, files[0]), top);
    }
    log(`  put ${fmt(result.put.wallMs / 1000, 1)} s, get ${fmt(result.get.usPerGet, 2)} us, scan ${fmt(result.scan.wallMs / 1000, 2)} s, ${mib(result.bytesClosed)} MiB`);
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const byName = Object.fromEntries(results.map((r) => [r.engine, r]));
const report = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', loadavg: loadavg(), node: process.version },
  options: { keys, batch, gets, cacheKib, sqliteJournal, dir: opts.dir, repeat },
  results,
  runs,
  goals: goals(byName),
};
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);

if (opts.json) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  process.stdout.write(formatTable(results));
  process.stdout.write(formatGoals(report.goals));
  if (opts.profile) for (const r of results) process.stdout.write(formatProfile(r));
  process.stdout.write(`\n(out/latest.json; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')})\n`);
}

function goals(by) {
  const b = by.btree;
  const s = by.sqlite;
  const l = by.lmdb;
  const list = [];
  if (b && s) {
    list.push({ goal: 'put at least SQLite (keys/s)', btree: b.put.keysPerSec, peer: s.put.keysPerSec, met: b.put.keysPerSec >= s.put.keysPerSec });
    list.push({ goal: 'get at least SQLite (gets/s)', btree: b.get.getsPerSec, peer: s.get.getsPerSec, met: b.get.getsPerSec >= s.get.getsPerSec });
    list.push({ goal: 'scan at least SQLite (keys/s)', btree: b.scan.keysPerSec, peer: s.scan.keysPerSec, met: b.scan.keysPerSec >= s.scan.keysPerSec });
  }
  if (b && l) {
    list.push({ goal: 'get within 2x of LMDB (us/get)', btree: b.get.usPerGet, peer: 2 * l.get.usPerGet, met: b.get.usPerGet <= 2 * l.get.usPerGet });
  }
  return list;
}

function fmt(x, digits) {
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
function mib(bytes) {
  return fmt(bytes / 2 ** 20, 1);
}

function formatTable(rows) {
  const header = ['engine', 'load', 'put keys/s', 'put s (cpu s)', 'commits/s', 'get us', 'get cpu us', 'scan keys/s', 'scan s', 'MiB', 'B/key', 'RSS MiB'];
  const lines = rows.map((r) => [
    r.engine,
    `${fmt(r.loadBefore, 1)}-${fmt(r.loadAfter, 1)}`,
    fmt(r.put.keysPerSec, 0),
    `${fmt(r.put.wallMs / 1000, 1)} (${fmt(r.put.cpuMs / 1000, 1)})`,
    fmt(r.put.commitsPerSec, 0),
    fmt(r.get.usPerGet, 2),
    fmt((r.get.cpuMs * 1000) / r.get.count, 2),
    fmt(r.scan.keysPerSec, 0),
    fmt(r.scan.wallMs / 1000, 2),
    mib(r.bytesClosed),
    fmt(r.bytesPerKey, 0),
    fmt(r.maxRssKib / 1024, 0),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |\n`;
  let text = `\n${rows[0] ? `${rows[0].keys.toLocaleString('en-US')} keys, commits of ${rows[0].batch}, 8-byte keys, 100-byte values\n` : ''}`;
  text += row(header);
  text += `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|\n`;
  for (const l of lines) text += row(l);
  for (const r of rows) text += `  ${r.engine}: ${r.describe}\n`;
  return text;
}

function formatGoals(list) {
  if (list.length === 0) return '';
  let text = '\nGoals (issue 10):\n';
  for (const g of list) {
    const digits = g.goal.includes('us/get') ? 2 : 0;
    text += `  ${g.met ? 'met    ' : 'NOT met'}  ${g.goal}: btree ${fmt(g.btree, digits)}, ${g.goal.includes('2x') ? '2 x LMDB' : 'SQLite'} ${fmt(g.peer, digits)}\n`;
  }
  return text;
}

function formatProfile(r) {
  let text = `\nProfile of ${r.engine} (self time, whole run including the workload generation):\n`;
  for (const f of r.profile ?? []) text += `  ${fmt(f.ms, 0).padStart(8)} ms  ${fmt(f.share * 100, 1).padStart(5)} %  ${f.name}\n`;
  return text;
}
