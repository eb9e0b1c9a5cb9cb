/**
 * The fetcher's options, derived from its settings table (fetcher/defaults.ts): all of them for
 * `petrel fetcher`, the local ones for `petrel crawl` and `petrel start`, and the argument list those
 * two give each fetcher process they start.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { formatDuration } from '../shared/duration.js';
import { FETCHER_PATIENCE_SETTINGS, FETCHER_SETTINGS, isIntegerSetting, type FetcherSetting, type FetcherSettingName, type FetcherSettingValues } from '../fetcher/defaults.js';
import { durationOption, integerOption } from './options.js';

const SETTINGS = Object.entries(FETCHER_SETTINGS) as [FetcherSettingName, FetcherSetting][];
const PATIENCE = Object.entries(FETCHER_PATIENCE_SETTINGS) as [string, FetcherSetting][];

/** The values of the local settings, as `petrel crawl` and `petrel start` parse them. */
export type LocalFetcherValues = Pick<FetcherSettingValues, 'concurrency' | 'contact' | 'maxBodyBytes' | 'timeoutMs' | 'allowPrivateAddresses' | 'resolve'>;

export function addFetcherOptions(command: Command, which: 'all' | 'local'): Command {
  for (const [, setting] of [...SETTINGS, ...PATIENCE]) {
    if (which === 'local' && !setting.local) continue;
    const option = new Option(setting.option, setting.help);
    if (isIntegerSetting(setting)) {
      const parse = setting.duration === true ? durationOption : integerOption;
      option.argParser(parse(option.long!, setting.min, setting.max)).default(setting.default, setting.duration === true ? formatDuration(setting.default) : undefined);
    } else if (setting.kind === 'flag') option.default(false);
    else if (setting.kind === 'list') {
      const check = setting.check;
      option
        .argParser((value: string, previous: string[]) => {
          // `none` empties the list (what the command line said before it, and a saved list: local-fetcher-settings.ts).
          if (value === 'none') return [];
          const wrong = check?.(value) ?? null;
          if (wrong !== null) throw new InvalidArgumentError(wrong);
          return [...previous, value];
        })
        .default([], 'none');
    }
    command.addOption(option);
    // `petrel crawl` and `start` keep these settings for the next run on the data directory: a flag can be turned off again.
    if (which === 'local' && setting.kind === 'flag') command.addOption(new Option(`--no-${setting.option.slice(2)}`, `turn off a ${setting.option} saved by an earlier run`));
  }
  return command;
}

/** Where a local fetcher process connects, and the name it shows. */
export interface FetcherConnection {
  readonly serverUrl: string;
  readonly tokenFile: string;
  readonly name: string;
  /** The CA file that verifies an HTTPS queue server. */
  readonly ca?: string;
}

/** The arguments of a `petrel fetcher` child: its connection, then every local setting given. */
export function fetcherArgs(values: LocalFetcherValues, connection: FetcherConnection): string[] {
  const args = ['fetcher', '--server', connection.serverUrl, '--token-file', connection.tokenFile, '--name', connection.name];
  for (const [name, setting] of SETTINGS) {
    if (!setting.local) continue;
    const value = values[name as keyof LocalFetcherValues];
    const flag = setting.option.split(' ')[0]!;
    if (setting.kind === 'flag') {
      if (value === true) args.push(flag);
    } else if (Array.isArray(value)) {
      for (const item of value) args.push(flag, item);
    } else if (value !== undefined) args.push(flag, String(value));
  }
  if (connection.ca !== undefined) args.push('--ca', connection.ca);
  return args;
}
