/**
 * `petrel db check|dump`: verify or list a data directory's crawl database. A damaged database is a
 * report (check) or one line naming the file (dump), never a stack trace; with --json the answer is
 * always one JSON object.
 */
import { once } from 'node:events';
import { Command } from 'commander';
import { urlHashHex } from '../shared/url-hash.js';
import { BTreeError } from '../queue-server/btree/index.js';
import { InsertLogError } from '../queue-server/storage/insert-log.js';
import { checkCrawlDb, type CrawlDbReport } from '../queue-server/crawldb/check.js';
import { CrawlDbReader } from '../queue-server/crawldb/crawl-db-reader.js';
import { decodeCrawlDbRecord } from '../queue-server/crawldb/record.js';
import { DATA_FILES, dataPath } from '../queue-server/storage/data-dir.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { checkExistingDataDir, DATA_OPTION, describeError, existingDataDirProblem, fail } from './options.js';

function crawlDbPath(dataDir: string, command: string): string {
  checkExistingDataDir(dataDir, command, DATA_FILES.crawlDb);
  return dataPath(dataDir, 'crawlDb');
}

export function dbCommand(): Command {
  const db = new Command('db').description('inspect the crawl database of a data directory (read-only; safe while no queue server writes it)');
  db.command('check')
    .description('verify the crawl database: B-Tree checksums, order, balance, free list, both meta pages; every record decodes, sits under its own URL hash, has sane fields')
    .option(DATA_OPTION.flags, 'data directory', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--json', 'print the report as one JSON object {ok, records, byStatus, faults, warnings} (also when the database cannot be read: {ok, error})')
    .addHelpText('after', exitCodesHelp(['ok', 'failed', 'usage', 'warnings']))
    .action((values: { data: string; json?: boolean }) => {
      const json = values.json === true;
      const path = crawlDbPathOrJson(values.data, json);
      let report: CrawlDbReport;
      try {
        report = checkCrawlDb(path);
      } catch (error) {
        const { message } = describeError(error);
        if (json) process.stdout.write(`${JSON.stringify({ ok: false, file: path, error: { code: codeOf(error), message } }, null, 2)}\n`);
        fail(`${path}: ${message}`, { command: 'db check' });
      }
      if (json) process.stdout.write(`${JSON.stringify({ file: path, ...report }, null, 2)}\n`);
      else {
        process.stdout.write(`${report.records} records: ${Object.entries(report.byStatus).map(([status, count]) => `${status} ${count}`).join(', ')}\n`);
        for (const warning of report.warnings) process.stdout.write(`WARNING ${warning.code}: ${warning.message}\n`);
        for (const fault of report.faults) process.stdout.write(`FAULT ${fault.code}${fault.key ? ` ${fault.key}` : ''}: ${fault.message}\n`);
        const warned = report.warnings.length === 0 ? '' : `, ${report.warnings.length} warning${report.warnings.length === 1 ? '' : 's'}`;
        process.stdout.write(report.ok ? `ok${warned}\n` : `${report.faults.length} fault(s)${warned}: ${path} is damaged; a copy of the data directory from before the damage is the safe way back\n`);
      }
      process.exitCode = !report.ok ? EXIT.failed : report.warnings.length > 0 ? EXIT.warnings : EXIT.ok;
    });
  db.command('dump')
    .description('write every crawl database record as one JSON object per line (key order)')
    .option(DATA_OPTION.flags, 'data directory', DATA_OPTION.parse, DATA_OPTION.default)
    .addHelpText('after', exitCodesHelp(['ok', 'failed', 'usage']))
    .action(async (values: { data: string }) => {
      const path = crawlDbPath(values.data, 'db dump');
      let tree: CrawlDbReader | null = null;
      let written = 0;
      try {
        tree = CrawlDbReader.open(path);
        for (const [key, bytes] of tree.entries()) {
          const line = `${JSON.stringify({ key: urlHashHex(key), ...decodeCrawlDbRecord(bytes) })}\n`;
          written++;
          if (!process.stdout.write(line)) await once(process.stdout, 'drain');
        }
      } catch (error) {
        if (!(error instanceof BTreeError) && !(error instanceof InsertLogError)) throw error;
        fail(`${path} is damaged after ${written} records (${error.message}): petrel db check --data ${values.data} lists what is wrong`, { command: 'db dump' });
      } finally {
        tree?.close();
      }
    });
  return db;
}

/** With --json even "no database here" is answered in JSON (with the same exit status). */
function crawlDbPathOrJson(dataDir: string, json: boolean): string {
  const problem = existingDataDirProblem(dataDir, DATA_FILES.crawlDb);
  const path = dataPath(dataDir, 'crawlDb');
  if (problem === null) return path;
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, file: path, error: { code: 'usage', message: problem } }, null, 2)}\n`);
  fail(problem, { status: EXIT.usage, command: 'db check' });
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'error';
}
