/** `petrel export`: the stored page records, one JSON object per line, to stdout. */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { Command, Option } from 'commander';
import { dataPath } from '../data-dir.js';
import { readPageArchive } from '../page-archive.js';
import { fail } from './options.js';

export function exportCommand(): Command {
  return new Command('export')
    .description('write the stored page records (URL, status, content type, title, description, language, excerpt, outlinks, signature, fetch time) to stdout')
    .requiredOption('--data <dir>', 'data directory of the crawl')
    .addOption(new Option('--format <format>', 'output format: jsonl, one JSON object per line').choices(['jsonl']).default('jsonl'))
    .action(async (values: { data: string; format: 'jsonl' }) => {
      const path = dataPath(values.data, 'pages');
      if (!existsSync(path)) fail(`no page archive at ${path}: is ${values.data} a Petrel data directory?`);
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') process.exit(0);
        throw error;
      });
      for await (const record of readPageArchive(path)) {
        if (!process.stdout.write(`${JSON.stringify(record)}\n`)) await once(process.stdout, 'drain');
      }
    });
}
