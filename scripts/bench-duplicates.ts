/**
 * bench-duplicates: what the duplicate indexes (queue-server/crawldb/duplicate-store.ts) cost a fetched
 * page once they are large, by page cache size. A benchmark, not a test. For each `--cache-mib` value, in
 * a child process of its own (so that RSS is its own), it indexes `--pages` pages the way the crawl does
 * (per page: the signature and near-duplicate look-ups, then adding both; `commitSome` after every
 * `--per-commit` pages, as each group commit of the crawl database calls it), then counts over
 * `--window` more group commits: file reads and writes per page (through a counting FileOps), fsyncs,
 * CPU and wall ms per page, and the process's RSS at the end. Signatures and simhashes are random, so
 * no page is a duplicate: every look-up reads its whole band buckets, the crawl's common case.
 *
 * The counts are what to compare (they do not depend on the machine's load); the times are one run's.
 *
 *   npm run build && node dist/scripts/bench-duplicates.js [--pages N] [--window N] [--per-commit N] [--cache-mib 4,16] [--json]
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DuplicateStore } from '../queue-server/crawldb/duplicate-store.js';
import { nodeFileOps, type FileOps } from '../queue-server/storage/file-ops.js';

const USAGE = `Usage: node dist/scripts/bench-duplicates.js [--pages N] [--window N] [--per-commit N] [--cache-mib LIST] [--json]

Fills the duplicate indexes with N random pages as a crawl does, then counts what W more group commits
of pages cost, once per page cache size, each in a child process.
  --pages N        pages indexed before the window (default 900000: about 2 million known URLs in
                   bench-queue-server scale; filling takes minutes)
  --window N       group commits counted (default 300)
  --per-commit N   pages per group commit (default 110: 1,100 pages/s at a commit every 100 ms)
  --cache-mib LIST page cache sizes to compare, MiB, comma-separated (default 4,16)
  --json           print JSON lines only
`;

interface Figures {
  cacheMiB: number;
  pagesBefore: number;
  windowPages: number;
  fillSeconds: number;
  readsPerPage: number;
  writesPerPage: number;
  fsyncs: number;
  cpuMsPerPage: number;
  wallMsPerPage: number;
  rssMiB: number;
}

function positive(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} takes a positive integer, not "${text}"`);
  return value;
}

/** One size, in this process. */
function measure(cacheMiB: number, pagesBefore: number, window: number, perCommit: number): Figures {
  const counts = { read: 0, write: 0, fsync: 0 };
  const io: FileOps = {
    ...nodeFileOps,
    read: (fd, buffer, offset, length, position) => (counts.read++, nodeFileOps.read(fd, buffer, offset, length, position)),
    write: (fd, buffer, offset, length, position) => (counts.write++, nodeFileOps.write(fd, buffer, offset, length, position)),
    fsync: (fd) => (counts.fsync++, nodeFileOps.fsync(fd)),
  };
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-duplicates-'));
  try {
    const store = DuplicateStore.open(join(dir, 'duplicates.btree'), { io, cacheBytes: cacheMiB * 2 ** 20 });
    const groupCommit = () => {
      for (let i = 0; i < perCommit; i++) {
        const bytes = randomBytes(24);
        const url = bytes.subarray(0, 8).toString('hex');
        const signature = bytes.subarray(8, 16).toString('hex');
        const simhash = bytes.subarray(16, 24).toString('hex');
        store.findSignature(signature, url, () => true);
        store.findNear(simhash, url, null, () => true);
        store.addSignature(signature, url);
        store.addNear(url, simhash);
      }
      store.commitSome();
    };
    const fillStart = performance.now();
    for (let pages = 0; pages < pagesBefore; pages += perCommit) groupCommit();
    const fillSeconds = (performance.now() - fillStart) / 1000;
    counts.read = counts.write = counts.fsync = 0;
    const cpuStart = process.cpuUsage();
    const wallStart = performance.now();
    for (let i = 0; i < window; i++) groupCommit();
    const cpu = process.cpuUsage(cpuStart);
    const wall = performance.now() - wallStart;
    const windowPages = window * perCommit;
    const figures: Figures = {
      cacheMiB,
      pagesBefore,
      windowPages,
      fillSeconds: round(fillSeconds, 1),
      readsPerPage: round(counts.read / windowPages, 2),
      writesPerPage: round(counts.write / windowPages, 2),
      fsyncs: counts.fsync,
      cpuMsPerPage: round((cpu.user + cpu.system) / 1000 / windowPages, 3),
      wallMsPerPage: round(wall / windowPages, 3),
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    };
    store.close();
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

function main(): number {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string', default: '900000' },
      window: { type: 'string', default: '300' },
      'per-commit': { type: 'string', default: '110' },
      'cache-mib': { type: 'string', default: '4,16' },
      child: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let pages: number, window: number, perCommit: number, sizes: number[];
  try {
    pages = positive('--pages', values.pages);
    window = positive('--window', values.window);
    perCommit = positive('--per-commit', values['per-commit']);
    sizes = values['cache-mib'].split(',').map((size) => positive('--cache-mib', size.trim()));
  } catch (error) {
    process.stderr.write(`bench-duplicates: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.child) {
    process.stdout.write(`${JSON.stringify(measure(sizes[0]!, pages, window, perCommit))}\n`);
    return 0;
  }
  const script = fileURLToPath(import.meta.url);
  const results: Figures[] = [];
  for (const size of sizes) {
    if (!values.json) process.stderr.write(`bench-duplicates: ${pages.toLocaleString('en')} pages with a ${size} MiB page cache...\n`);
    const child = spawnSync(process.execPath, [script, '--child', '--pages', String(pages), '--window', String(window), '--per-commit', String(perCommit), '--cache-mib', String(size)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    if (child.status !== 0) {
      process.stderr.write(`bench-duplicates: the run with ${size} MiB failed (status ${child.status})\n`);
      return 1;
    }
    const figures = JSON.parse(child.stdout.trim()) as Figures;
    results.push(figures);
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  }
  if (!values.json && results.length > 1) {
    const [first] = results;
    const ratio = (value: number, base: number) => (base === 0 ? 'n/a' : String(round(value / base, 3)));
    for (const other of results.slice(1)) {
      process.stdout.write(
        `${other.cacheMiB} MiB / ${first!.cacheMiB} MiB: reads per page ${ratio(other.readsPerPage, first!.readsPerPage)}, ` +
          `writes per page ${ratio(other.writesPerPage, first!.writesPerPage)}, CPU per page ${ratio(other.cpuMsPerPage, first!.cpuMsPerPage)}, ` +
          `RSS ${other.rssMiB - first!.rssMiB >= 0 ? '+' : ''}${other.rssMiB - first!.rssMiB} MiB\n`,
      );
    }
  }
  return 0;
}

process.exitCode = main();
