/**
 * The settings of the fetchers `petrel crawl` and `petrel start` run on this machine, kept in the data
 * directory (`fetchers.json`) so that the next run on it goes on with them, as `crawl.json` keeps the
 * crawl's. Without it, a crawl of an intranet run again without `--allow-private-addresses` (the way
 * its closing lines say to run it again) recorded every page of the hosts that are not seeds
 * `blocked-address`, gone, and took them out of the search index.
 *
 * An option given on the command line wins and is saved; `--no-allow-private-addresses` and
 * `--resolve none` undo saved ones. A file that does not parse, or holds a value the option would
 * refuse, is an error naming the file (status 2), never silently ignored.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { FETCHER_SETTINGS, isIntegerSetting, type FetcherSetting, type FetcherSettingName } from '../fetcher/defaults.js';
import { readJsonFile, writeFileAtomic } from '../queue-server/storage/atomic-file.js';
import type { LocalFetcherValues } from './fetcher-options.js';
import { EXIT } from './exit-codes.js';
import { fail } from './options.js';

export const LOCAL_FETCHERS_FILE = 'fetchers.json';
const FORMAT = 1;

const LOCAL = (Object.entries(FETCHER_SETTINGS) as [FetcherSettingName, FetcherSetting][]).filter(([, setting]) => setting.local) as [keyof LocalFetcherValues, FetcherSetting][];

/** The saved settings of `dataDir`, checked as their options check them; null when there are none. Throws an Error naming the file. */
export function readLocalFetcherSettings(dataDir: string): Partial<LocalFetcherValues> | null {
  const path = join(dataDir, LOCAL_FETCHERS_FILE);
  let raw: unknown;
  try {
    raw = readJsonFile<unknown>(path);
  } catch (error) {
    throw new Error(`cannot read the saved fetcher settings ${path}: ${(error as Error).message} (fix or remove the file)`);
  }
  if (raw === null) return null;
  const wrong = (why: string): never => {
    throw new Error(`the saved fetcher settings ${path} are not valid (${why}): fix or remove the file`);
  };
  if (typeof raw !== 'object' || raw === null || (raw as { format?: unknown }).format !== FORMAT) wrong(`no "format": ${FORMAT}`);
  const settings = (raw as { settings?: unknown }).settings;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) wrong('no "settings" object');
  const saved: Record<string, unknown> = {};
  for (const [name, setting] of LOCAL) {
    const value = (settings as Record<string, unknown>)[name];
    if (value === undefined) continue;
    const problem = checkValue(setting, value);
    if (problem !== null) wrong(`${name}: ${problem}`);
    saved[name] = value;
  }
  return saved as Partial<LocalFetcherValues>;
}

function checkValue(setting: FetcherSetting, value: unknown): string | null {
  if (isIntegerSetting(setting)) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < setting.min || value > (setting.max ?? Number.MAX_SAFE_INTEGER)) return `a whole number from ${setting.min} wanted`;
    return null;
  }
  if (setting.kind === 'flag') return typeof value === 'boolean' ? null : 'true or false wanted';
  if (setting.kind === 'list') {
    if (!Array.isArray(value) || !value.every((item): item is string => typeof item === 'string')) return 'a list of strings wanted';
    for (const item of value) {
      const problem = setting.check?.(item) ?? null;
      if (problem !== null) return problem;
    }
    return null;
  }
  return typeof value === 'string' ? (setting.check?.(value) ?? null) : 'a string wanted';
}

/**
 * The values to run the fetchers with: each option given on the command line, else the saved value,
 * else the option's default; and the options taken from the file that differ from the defaults (to say so).
 */
export function withSavedFetcherSettings(command: Command, values: LocalFetcherValues, saved: Partial<LocalFetcherValues> | null): { values: LocalFetcherValues; fromFile: string[] } {
  if (saved === null) return { values, fromFile: [] };
  const merged: Record<string, unknown> = { ...values };
  const fromFile: string[] = [];
  for (const [name, setting] of LOCAL) {
    if (command.getOptionValueSource(name) === 'cli' || saved[name] === undefined) continue;
    merged[name] = saved[name];
    const flag = setting.option.split(' ')[0]!;
    const value = saved[name];
    if (JSON.stringify(value) === JSON.stringify(defaultOf(setting))) continue;
    if (setting.kind === 'flag') fromFile.push(value === true ? flag : `--no-${flag.slice(2)}`);
    else if (Array.isArray(value)) fromFile.push(...value.map((item) => `${flag} ${item}`));
    else fromFile.push(`${flag} ${String(value)}`);
  }
  return { values: merged as unknown as LocalFetcherValues, fromFile };
}

/**
 * What `petrel crawl` and `petrel start` run their local fetchers with: the settings given, the others
 * as saved by the last run on the data directory (a saved file that cannot be used is bad usage). And
 * the words that say which came from the file, `go on with --concurrency 4 (saved in ...)`, or null.
 */
export function localFetcherSettingsFor(command: Command, values: LocalFetcherValues, dataDir: string, commandName: string): { values: LocalFetcherValues; goOnWith: string | null } {
  let merged: ReturnType<typeof withSavedFetcherSettings>;
  try {
    merged = withSavedFetcherSettings(command, values, readLocalFetcherSettings(dataDir));
  } catch (error) {
    fail((error as Error).message, { status: EXIT.usage, command: commandName });
  }
  const goOnWith = merged.fromFile.length === 0 ? null : `go on with ${merged.fromFile.join(' ')} (saved in ${join(dataDir, LOCAL_FETCHERS_FILE)}; give an option again to change it)`;
  return { values: merged.values, goOnWith };
}

function defaultOf(setting: FetcherSetting): unknown {
  if (isIntegerSetting(setting)) return setting.default;
  if (setting.kind === 'flag') return false;
  if (setting.kind === 'list') return [];
  return undefined;
}

/** Keeps the values the fetchers run with in the data directory (atomically). */
export function saveLocalFetcherSettings(dataDir: string, values: LocalFetcherValues): void {
  const settings: Record<string, unknown> = {};
  for (const [name] of LOCAL) if (values[name] !== undefined) settings[name] = values[name];
  writeFileAtomic(join(dataDir, LOCAL_FETCHERS_FILE), `${JSON.stringify({ format: FORMAT, settings }, null, 2)}\n`);
}
