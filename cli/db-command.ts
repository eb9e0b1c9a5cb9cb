/** `petrel db check|dump`: verify or list a data directory's crawl database. */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { Command } from 'commander';
import { urlHashHex } from '../shared/url-hash.js';
import { BTree } from '../queue-server/btree/index.js';
import { checkCrawlDb } from '../queue-server/crawldb/check.js';
import { decodeCrawlDbRecord } from '../queue-server/crawldb/record.js';
import { dataPath } from '../queue-server/storage/data-dir.js';
import { fail } from './options.js';

function crawlDbPath(dataDir: string): string {
  const path = dataPath(dataDir, 'crawlDb');
  if (!existsSync(path)) fail(`no crawl database at ${path}: is ${dataDir} a Petrel data directory?`, { status: 2, command: 'db' });
  return path;
}

export function dbCommand(): Command {
  const db = new Command('db').description('inspect the crawl database of a data directory (read-only; safe while no queue server writes it)');
  db.command('check')
    .description('verify the crawl database: B-Tree checksums, order, balance, free list; every record decodes, sits under its own URL hash, has sane fields; exit status 1 on any fault')
    .requiredOption('--data <dir>', 'data directory')
    .option('--json', 'print the report as JSON', false)
    .action((values: { data: string; json: boolean }) => {
      const report = checkCrawlDb(crawlDbPath(values.data));
      if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else {
        process.stdout.write(`${report.records} records: ${Object.entries(report.byStatus).map(([status, count]) => `${status} ${count}`).join(', ')}\n`);
        for (const fault of report.faults) process.stdout.write(`FAULT ${fault.code}${fault.key ? ` ${fault.key}` : ''}: ${fault.message}\n`);
        process.stdout.write(report.ok ? 'ok\n' : `${report.faults.length} fault(s)\n`);
      }
      process.exitCode = report.ok ? 0 : 1;
    });
  db.command('dump')
    .description('write every crawl database record as one JSON object per line (key order)')
    .requiredOption('--data <dir>', 'data directory')
    .action(async (values: { data: string }) => {
      const tree = BTree.open(crawlDbPath(values.data), { create: false, readOnly: true });
      try {
        for (const [key, bytes] of tree.entries()) {
          const line = `${JSON.stringify({ key: urlHashHex(key), ...decodeCrawlDbRecord(bytes) })}\n`;
          if (!process.stdout.write(line)) await once(process.stdout, 'drain');
        }
      } finally {
        tree.close();
      }
    });
  return db;
}
