/**
 * `petrel export`: the stored page records, one JSON object per line, to stdout: by default the
 * latest record of each URL (a 304 writes no record, so the last full fetch stands), with --all the
 * whole history. Memory: one map entry per URL for the default.
 */
import { once } from 'node:events';
import { Command, Option } from 'commander';
import { DATA_FILES, dataPath } from '../queue-server/storage/data-dir.js';
import { readPageArchive } from '../queue-server/crawl/page-archive.js';
import type { PageRecord } from '../queue-server/crawl/outcome.js';
import { exitCodesHelp } from './exit-codes.js';
import { checkExistingDataDir, DATA_OPTION } from './options.js';

export function exportCommand(): Command {
  return new Command('export')
    .description('write the stored page records (URL, status, content type, title, description, language, excerpt, outlink count and URLs, signature, fetch time) to stdout')
    .option(DATA_OPTION.flags, 'data directory of the crawl', DATA_OPTION.default)
    .addOption(new Option('--format <format>', 'output format: jsonl, one JSON object per line').choices(['jsonl']).default('jsonl'))
    .option('--all', 'every record of every pass, oldest first (without it: the latest record of each URL)')
    .addHelpText(
      'after',
      '\nEach record has outlinkCount (links found on the page) and outlinks (the first 1,000 of them, absolute and\n' +
        'normalized; records written before outlinks were kept have outlinks: [] and their count in outlinkCount).\n' +
        exitCodesHelp(['ok', 'failed', 'usage']),
    )
    .action(async (values: { data: string; format: 'jsonl'; all?: boolean }) => {
      checkExistingDataDir(values.data, 'export', DATA_FILES.pages);
      const path = dataPath(values.data, 'pages');
      // Latest record per URL: a first pass finds each URL's last record, a second writes those.
      let latest: Map<string, number> | null = null;
      if (values.all !== true) {
        latest = new Map();
        let index = 0;
        for await (const record of readPageArchive(path)) latest.set(record.url, index++);
      }
      let index = 0;
      for await (const record of readPageArchive(path)) {
        if (latest !== null && latest.get(record.url) !== index++) continue;
        if (!process.stdout.write(`${JSON.stringify(exported(record))}\n`)) await once(process.stdout, 'drain');
      }
    });
}

/**
 * A record as exported: the current shape, also for records an older Petrel wrote, whose `outlinks`
 * was the count (now `outlinkCount`, with `outlinks` the URLs).
 */
function exported(record: PageRecord | (Omit<PageRecord, 'outlinks' | 'outlinkCount'> & { outlinks: number })): PageRecord {
  if (typeof record.outlinks !== 'number') return record as PageRecord;
  const { outlinks, ...rest } = record;
  return { ...rest, outlinkCount: outlinks, outlinks: [] } as PageRecord;
}
