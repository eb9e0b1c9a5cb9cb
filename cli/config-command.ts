/**
 * `petrel config print`: the configuration a `petrel queue-server` given the same options would run
 * with, each value with where it came from (command line, config file, crawl.json, default), as YAML
 * a config file can start from (or --json). Reads, never writes: the data directory is not created.
 */
import { existsSync } from 'node:fs';
import { Command } from 'commander';
import { stringify } from 'yaml';
import { formatDuration } from '../shared/duration.js';
import { CRAWL_SETTINGS, type CrawlSetting } from '../queue-server/crawl-config.js';
import { crawlOptionKeys, crawlSettingsFor } from './crawl-options.js';
import { effectiveValues } from './config-file.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { failuresInJson } from './options.js';
import { addQueueServerOptions, configFileOf, loadSaved } from './queue-server-command.js';

export function configCommand(): Command {
  const config = new Command('config').description('the queue server configuration: petrel config print');
  const print = addQueueServerOptions(
    new Command('print').description('print the effective configuration of petrel queue-server with these options (and --config FILE), each value with its source'),
  ).option('--json', 'print [{key, value, source}] as JSON');
  print.addHelpText('after', `\nPrecedence: command line, then --config FILE, then <data>/crawl.json, then the defaults.\n${exitCodesHelp(['ok', 'usage'])}`);
  print.action(() => {
    const name = 'config print';
    const file = configFileOf(print, name);
    const values = print.opts() as { data: string; once?: boolean; json?: boolean };
    const saved = existsSync(values.data) ? loadSaved(values.data, name) : null;
    const settings = crawlSettingsFor(print, values.once === true, saved?.settings ?? null, name, file?.crawl ?? null);
    const entries = effectiveValues(print, file, saved?.settings ?? null, settings);
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
      return;
    }
    const durations = new Set(crawlOptionKeys().filter(({ name: setting }) => isDuration(CRAWL_SETTINGS[setting] as CrawlSetting)).map(({ flag }) => flag.replace(/^--/, '')));
    const lines = [`# petrel queue-server configuration${file === null ? '' : ` (config file ${file.path})`}: a valid config file; each value's source after the #`];
    for (const { key, value, source } of entries) {
      const shown = value === null ? 'none' : durations.has(key) && typeof value === 'number' ? formatDuration(value) : value;
      const line = `${key}: ${stringify(shown, { lineWidth: 0, collectionStyle: 'flow' }).trimEnd()}`;
      lines.push(`${line.padEnd(40)} # ${source}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    process.exitCode = EXIT.ok;
  });
  config.addCommand(failuresInJson(print));
  return config;
}

function isDuration(setting: CrawlSetting): boolean {
  return setting.kind === 'integer' && setting.duration;
}
