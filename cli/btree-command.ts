/**
 * `petrel btree`: offline inspection of a B-tree file (check, stats). Opens the file read-only and never
 * creates one. Checking a file that a running queue server is writing can report spurious faults, because
 * pages of the tree being walked may be reused by the server's commits meanwhile; stop the server first.
 */
import { Command } from 'commander';
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BTree, BTreeError, type BTreeStats, type CheckFault } from '../queue-server/btree/index.js';
import { upgradeBtreeFile, type UpgradeReport } from '../queue-server/btree/upgrade.js';
import { FORMAT_VERSION, MAX_PAGE_SIZE, META_PROBE_BYTES, MIN_PAGE_SIZE, probeMetaVersion, UPGRADABLE_VERSION } from '../queue-server/btree/page-codec.js';
import { lockDataDir } from '../queue-server/storage/data-dir.js';
import { EXIT } from './exit-codes.js';

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

/** Exit statuses (exit-codes.ts): 0 clean, 1 the file has faults (or cannot be opened because it is corrupt), 2 unusable input, 4 warnings only. */
const EXIT_FAULTS = EXIT.failed;
const EXIT_USAGE = EXIT.usage;
const EXIT_WARNINGS = EXIT.warnings;

const CHECK_HELP = `
Exit status: 0 when clean, 1 when the file has faults (including meta or free-list pages too damaged to
open), 2 when the file is missing or cannot be read, 4 when it has no fault but a warning (one of the two
meta pages is damaged: the tree is read from the other, and the next commit rewrites the damaged one).
With --json the answer is always one JSON object, also when the file cannot be read ({file, ok, error}).
`;

const STATS_HELP = `
Exit status: 0 when the figures were printed, 1 when the file is too damaged to open (petrel btree check
lists what is wrong), 2 when the file is missing or cannot be read.
`;

const UPGRADE_HELP = `
Format ${UPGRADABLE_VERSION} differs from format ${FORMAT_VERSION} in the page checksum only (queue-server/btree/LAYOUT.md
"Format versions"). Each file is rewritten beside itself (FILE.upgrade), fsynced and checked in full, then
renamed over the original: a kill at any point leaves the original or the whole upgraded file. A file
already of format ${FORMAT_VERSION} is left alone. With --data, every *.btree file of the data directory is upgraded
while its LOCK is held, so a queue server cannot start on it meanwhile (and the upgrade refuses to run
beside one).

Example:
  petrel btree upgrade --data ./petrel-data

Exit status: 0 when every file is of format ${FORMAT_VERSION} afterwards, 1 when a file could not be upgraded (damaged:
the original is left as it was; petrel btree check lists what is wrong), 2 on bad usage (no file, a
missing file, a data directory in use).
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
    .addHelpText('after', CHECK_HELP)
    .action((file: string, opts: { json?: boolean }) => {
      const json = opts.json === true;
      const opened = openForInspection(file, io, json);
      let faults: CheckFault[];
      let warnings: CheckFault[] = [];
      if (opened.kind === 'unusable') return;
      if (opened.kind === 'corrupt') {
        faults = [{ code: 'PAGE_CORRUPT', ...(opened.error.page === undefined ? {} : { page: opened.error.page }), message: opened.error.message }];
      } else {
        try {
          const report = opened.tree.check();
          faults = report.faults;
          warnings = report.warnings;
        } finally {
          opened.tree.close();
        }
      }
      const ok = faults.length === 0;
      if (json) {
        io.out(`${JSON.stringify({ file, ok, faults, warnings })}\n`);
      } else {
        for (const w of warnings) io.out(`WARNING ${w.code}${w.page === undefined ? '' : ` page ${w.page}`}: ${w.message}\n`);
        for (const f of faults) io.out(`${f.code}${f.page === undefined ? '' : ` page ${f.page}`}: ${f.message}\n`);
        const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
        io.out(ok ? `${file}: ok${warned}\n` : `${file}: ${faults.length} fault${faults.length === 1 ? '' : 's'}${warned}\n`);
      }
      io.setExitCode(!ok ? EXIT_FAULTS : warnings.length > 0 ? EXIT_WARNINGS : 0);
    });

  btree
    .command('stats')
    .description('print sizes and counters: keys, height, pages, free pages, file size, page size, txid')
    .argument('<file>', 'B-tree file to describe')
    .option('--json', 'print the stats as one JSON object instead of a table')
    .addHelpText('after', STATS_HELP)
    .action((file: string, opts: { json?: boolean }) => {
      const json = opts.json === true;
      const opened = openForInspection(file, io, json);
      if (opened.kind === 'unusable') return;
      if (opened.kind === 'corrupt') {
        if (json) io.out(`${JSON.stringify({ file, ok: false, error: { code: opened.error.code, message: opened.error.message } })}\n`);
        else io.err(`petrel btree: ${file}: ${opened.error.message} (petrel btree check ${file} lists what is wrong)\n`);
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

  btree
    .command('upgrade')
    .description(`rewrite B-tree files of format ${UPGRADABLE_VERSION} (an older Petrel's) in format ${FORMAT_VERSION}, crash-safely`)
    .argument('[files...]', 'B-tree files to upgrade')
    .option('--data <dir>', 'upgrade every *.btree file of this data directory (stop its queue server first)')
    .option('--json', 'print one JSON object per file {file, fromVersion, toVersion, upgraded, pages, keys} or {file, error}')
    .addHelpText('after', UPGRADE_HELP)
    .action((files: string[], opts: { data?: string; json?: boolean }) => {
      if ((opts.data === undefined) === (files.length === 0)) {
        io.err('petrel btree upgrade: give the files to upgrade, or --data DIR (not both)\n');
        io.setExitCode(EXIT_USAGE);
        return;
      }
      let release = (): void => {};
      let targets = files;
      if (opts.data !== undefined) {
        const dir = opts.data;
        try {
          release = lockDataDir(dir);
          targets = readdirSync(dir).filter((name) => name.endsWith('.btree')).sort().map((name) => join(dir, name));
        } catch (error) {
          io.err(`petrel btree upgrade: ${(error as Error).message}\n`);
          io.setExitCode(EXIT_USAGE);
          return;
        }
      }
      let failed = false;
      let unusable = false;
      try {
        for (const file of targets) {
          let report: UpgradeReport;
          try {
            report = upgradeBtreeFile(file);
          } catch (error) {
            const corrupt = error instanceof BTreeError;
            if (corrupt) failed = true;
            else unusable = true;
            const message = (error as Error).message;
            if (opts.json === true) io.out(`${JSON.stringify({ file, error: { code: (error as { code?: string }).code ?? 'error', message } })}\n`);
            io.err(`petrel btree upgrade: ${corrupt ? `${file}: ` : ''}${message}\n`);
            continue;
          }
          if (opts.json === true) io.out(`${JSON.stringify(report)}\n`);
          else if (report.upgraded) io.out(`${file}: upgraded from format ${report.fromVersion} to ${report.toVersion} (${report.pages} pages, ${report.keys} keys, checked clean)\n`);
          else io.out(`${file}: already format ${report.toVersion}, left alone\n`);
        }
        if (targets.length === 0) io.out(`${opts.data}: no *.btree files\n`);
      } finally {
        release();
      }
      io.setExitCode(failed ? EXIT_FAULTS : unusable ? EXIT_USAGE : 0);
    });

  return btree;
}

type Opened =
  | { readonly kind: 'open'; readonly tree: BTree }
  | { readonly kind: 'corrupt'; readonly error: BTreeError }
  | { readonly kind: 'unusable' };

/**
 * Why `file` is no B-tree to inspect at all, or null: a directory (a data directory, most likely), or a
 * file with the magic of neither meta page at any legal page size (pages.jsonl, a token). A file with
 * one meta page's magic is a B-tree, damaged or not, and the check says what is wrong with it.
 */
function notABtree(file: string): { code: string; message: string } | null {
  let fd: number;
  try {
    if (statSync(file).isDirectory()) return { code: 'EISDIR', message: `${file} is a directory: give a B-tree file in it, such as ${join(file, 'crawldb.btree')} (petrel db check --data DIR checks a data directory's crawl database)` };
    fd = openSync(file, 'r');
  } catch {
    return null; // BTree.open says what is wrong (a missing file, no permission)
  }
  try {
    const head = Buffer.alloc(META_PROBE_BYTES);
    // Slot 0 at the start, slot 1 one page in, at every page size a file may have.
    for (let at = 0; at <= MAX_PAGE_SIZE; at = at === 0 ? MIN_PAGE_SIZE : at * 2) {
      if (readSync(fd, head, 0, META_PROBE_BYTES, at) === META_PROBE_BYTES && probeMetaVersion(head) !== null) return null;
    }
    return { code: 'NOT_A_BTREE', message: `${file} is not a Petrel B-tree file (no meta page at its start or at any page size): the B-tree files of a data directory end in .btree` };
  } finally {
    closeSync(fd);
  }
}

function openForInspection(file: string, io: BtreeCliIo, json: boolean): Opened {
  const unusable = (code: string, message: string): Opened => {
    if (json) io.out(`${JSON.stringify({ file, ok: false, error: { code, message } })}\n`);
    io.err(`petrel btree: ${message}\n`);
    io.setExitCode(EXIT_USAGE);
    return { kind: 'unusable' };
  };
  const wrong = notABtree(file);
  if (wrong !== null) return unusable(wrong.code, wrong.message);
  try {
    return { kind: 'open', tree: BTree.open(file, { create: false, readOnly: true, cachePages: 256 }) };
  } catch (err) {
    if (err instanceof BTreeError && err.code === 'BTREE_CORRUPT') return { kind: 'corrupt', error: err };
    const message = err instanceof Error ? err.message : String(err);
    const code = (err as { code?: unknown }).code;
    if (json) io.out(`${JSON.stringify({ file, ok: false, error: { code: typeof code === 'string' ? code : 'error', message } })}\n`);
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
