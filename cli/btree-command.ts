/**
 * `petrel btree`: offline inspection of a B-tree file (check, stats). Opens the file read-only and never
 * creates one. Checking a file that a running queue server is writing can report spurious faults, because
 * pages of the tree being walked may be reused by the server's commits meanwhile; stop the server first.
 */
import { Command } from 'commander';
import { BTree, BTreeError, type BTreeStats, type CheckFault } from '../queue-server/btree/index.js';

/** Where the command writes; injectable so tests can capture output and exit codes. */
export interface BtreeCliIo {
  out(text: string): void;
  err(text: string): void;
  setExitCode(code: number): void;
}

const processIo: BtreeCliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  setExitCode: (code) => {
    process.exitCode = code;
  },
};

/** Exit statuses: 0 clean, 1 the file has faults (or cannot be opened because it is corrupt), 2 unusable input. */
const EXIT_FAULTS = 1;
const EXIT_USAGE = 2;

const EXIT_HELP = `
Exit status: 0 when clean, 1 when the file has faults (including meta or free-list pages too damaged to
open), 2 when the file is missing or cannot be read.
`;

export function btreeCommand(io: BtreeCliIo = processIo): Command {
  const btree = new Command('btree').description(
    'inspect a Petrel B-tree file (the queue server\'s on-disk index); opens it read-only',
  );

  btree
    .command('check')
    .description('verify every page: checksums, key order, balance, fill, free-list accounting and counters')
    .argument('<file>', 'B-tree file to check')
    .option('--json', 'print the report as one JSON object {file, ok, faults: [{code, page?, message}]}')
    .addHelpText('after', EXIT_HELP)
    .action((file: string, opts: { json?: boolean }) => {
      const opened = openForInspection(file, io);
      let faults: CheckFault[];
      if (opened.kind === 'unusable') return;
      if (opened.kind === 'corrupt') {
        faults = [{ code: 'PAGE_CORRUPT', ...(opened.error.page === undefined ? {} : { page: opened.error.page }), message: opened.error.message }];
      } else {
        try {
          faults = opened.tree.check().faults;
        } finally {
          opened.tree.close();
        }
      }
      const ok = faults.length === 0;
      if (opts.json === true) {
        io.out(`${JSON.stringify({ file, ok, faults })}\n`);
      } else if (ok) {
        io.out(`${file}: ok\n`);
      } else {
        for (const f of faults) io.out(`${f.code}${f.page === undefined ? '' : ` page ${f.page}`}: ${f.message}\n`);
        io.out(`${file}: ${faults.length} fault${faults.length === 1 ? '' : 's'}\n`);
      }
      io.setExitCode(ok ? 0 : EXIT_FAULTS);
    });

  btree
    .command('stats')
    .description('print sizes and counters: keys, height, pages, free pages, file size, page size, txid')
    .argument('<file>', 'B-tree file to describe')
    .option('--json', 'print the stats as one JSON object instead of a table')
    .addHelpText('after', EXIT_HELP)
    .action((file: string, opts: { json?: boolean }) => {
      const opened = openForInspection(file, io);
      if (opened.kind === 'unusable') return;
      if (opened.kind === 'corrupt') {
        io.err(`${file}: ${opened.error.message}\n`);
        io.setExitCode(EXIT_FAULTS);
        return;
      }
      let stats: BTreeStats;
      try {
        stats = opened.tree.stats();
      } finally {
        opened.tree.close();
      }
      io.out(opts.json === true ? `${JSON.stringify({ file, ...stats })}\n` : formatStats(file, stats));
      io.setExitCode(0);
    });

  return btree;
}

type Opened =
  | { readonly kind: 'open'; readonly tree: BTree }
  | { readonly kind: 'corrupt'; readonly error: BTreeError }
  | { readonly kind: 'unusable' };

function openForInspection(file: string, io: BtreeCliIo): Opened {
  try {
    return { kind: 'open', tree: BTree.open(file, { create: false, readOnly: true, cachePages: 256 }) };
  } catch (err) {
    if (err instanceof BTreeError && err.code === 'BTREE_CORRUPT') return { kind: 'corrupt', error: err };
    const message = err instanceof Error ? err.message : String(err);
    io.err(`petrel btree: ${message}\n`);
    io.setExitCode(EXIT_USAGE);
    return { kind: 'unusable' };
  }
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]} (${n} B)`;
}

function formatStats(file: string, s: BTreeStats): string {
  const rows: Array<[string, string]> = [
    ['file', file],
    ['keys', String(s.keys)],
    ['height', String(s.height)],
    ['pages', `${s.pages} (${s.freePages} free, 2 meta)`],
    ['file size', formatBytes(s.fileBytes)],
    ['page size', `${s.pageSize} B (values up to ${s.maxValueBytes} B)`],
    ['last commit', `txid ${s.txid}`],
    ['cache', `${s.cachePages}/${s.cacheCapacity} pages, ${s.cacheHits} hits, ${s.cacheMisses} misses`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}\n`).join('');
}
