/**
 * `petrel export`: the stored page records, one JSON object per line, to stdout: by default the
 * latest record of each URL (a 304 writes no record, so the last full fetch stands), with --all the
 * whole history. Memory: one map entry per URL for the default.
 */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { Command, Option } from 'commander';
import { dataPath } from '../queue-server/storage/data-dir.js';
import { readPageArchive } from '../queue-server/crawl/page-archive.js';
import { fail } from './options.js';

export function exportCommand(): Command {
  return new Command('export')
    .description('write the stored page records (URL, status, content type, title, description, language, excerpt, outlinks, signature, fetch time) to stdout')
    .requiredOption('--data <dir>', 'data directory of the crawl')
    .addOption(new Option('--format <format>', 'output format: jsonl, one JSON object per line').choices(['jsonl']).default('jsonl'))
    .option('--all', 'every record of every pass, oldest first (default: the latest record of each URL)', false)
    .action(async (values: { data: string; format: 'jsonl'; all: boolean }) => {
      const path = dataPath(values.data, 'pages');
      if (!existsSync(path)) fail(`no page archive at ${path}: is ${values.data} a Petrel data directory?`);
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') process.exit(0);
        throw error;
      });
      // Latest record per URL: a first pass finds each URL's last record, a second writes those.
      let latest: Map<string, number> | null = null;
      if (!values.all) {
        latest = new Map();
        let index = 0;
        for await (const record of readPageArchive(path)) latest.set(record.url, index++);
      }
      let index = 0;
      for await (const record of readPageArchive(path)) {
        if (latest !== null && latest.get(record.url) !== index++) continue;
        if (!process.stdout.write(`${JSON.stringify(record)}\n`)) await once(process.stdout, 'drain');
      }
    });
}
