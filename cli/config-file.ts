/**
 * The queue server's config file (`petrel queue-server --config petrel.yaml`, `petrel config print`):
 * YAML, one key per long option without its `--` (`delay-ms: 2s`, `seed: [https://example.org/]`),
 * each value checked by the schema of its crawl setting in queue-server/crawl-config.ts (the same one
 * the options and the API go through), durations also as `90s`, limits also as `none`. Unknown keys
 * and bad values are refused with the key and what was expected, before anything starts.
 *
 * Precedence, highest first: the command line, the config file, crawl.json (what the last run on the
 * data directory saved, including a crawl started from the admin page), the defaults. The file is the
 * operator's standing instructions, read at every (re)start, so it overrides what the daemon saved;
 * the command line is the one-off. A stopped crawl (admin page) stays stopped across restarts even
 * when the file names seeds: only --seed on the command line starts it again, as before.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { CRAWL_SETTINGS, type CrawlConfigInput, type CrawlSetting } from '../queue-server/crawl-config.js';
import { DURATION_SYNTAX, formatDuration, parseDuration } from '../shared/duration.js';
import { crawlOptionKeys } from './crawl-options.js';
import { LOG_FORMATS, LOG_LEVELS } from '../shared/logger.js';

/** Options of the queue server itself (not crawl settings) that a config file may set: key, commander attribute. */
const DAEMON_KEYS = {
  // As --data: a blank value names no directory (it would be created with that name, or be the current one).
  data: { attribute: 'data', schema: z.string().refine((value) => value.trim() !== ''), expected: 'a directory path' },
  host: { attribute: 'host', schema: z.string().min(1), expected: 'an address to listen on, e.g. 127.0.0.1' },
  port: { attribute: 'port', schema: z.number().int().min(0).max(65535), expected: 'a port number from 0 to 65535' },
  'token-file': { attribute: 'tokenFile', schema: z.string().min(1), expected: 'a file path' },
  'tls-cert': { attribute: 'tlsCert', schema: z.string().min(1), expected: 'a PEM file path' },
  'tls-key': { attribute: 'tlsKey', schema: z.string().min(1), expected: 'a PEM file path' },
  once: { attribute: 'once', schema: z.boolean(), expected: 'true or false' },
  'public-search': { attribute: 'publicSearch', schema: z.boolean(), expected: 'true or false' },
  'log-level': { attribute: 'logLevel', schema: z.enum(LOG_LEVELS), expected: `one of ${LOG_LEVELS.join(', ')}` },
  'log-format': { attribute: 'logFormat', schema: z.enum(LOG_FORMATS), expected: `one of ${LOG_FORMATS.join(', ')}` },
} as const;

interface FileKey {
  readonly key: string;
  readonly schema: z.ZodType<unknown>;
  readonly expected: string;
  /** A crawl setting's name, or a daemon option's commander attribute. */
  readonly target: { readonly kind: 'crawl'; readonly name: string } | { readonly kind: 'daemon'; readonly attribute: string };
  /** A `--no-` option's key (`no-warc: true` is `warc: false`): the file's value is the setting's negation. */
  readonly negated?: true;
}

function fileKeys(): FileKey[] {
  const keys: FileKey[] = Object.entries(DAEMON_KEYS).map(([key, spec]) => ({ key, schema: spec.schema, expected: spec.expected, target: { kind: 'daemon', attribute: spec.attribute } }));
  for (const { name, flag } of crawlOptionKeys()) {
    const setting = CRAWL_SETTINGS[name] as CrawlSetting;
    if (flag.startsWith('--no-')) {
      // `no-warc: true` says what `--no-warc` says: the setting (warc) is false.
      const own = setting.schema as z.ZodType<unknown>;
      const schema = z.boolean().transform((value, ctx) => {
        const parsed = own.safeParse(!value);
        if (!parsed.success) ctx.addIssue({ code: 'custom', message: parsed.error.issues[0]?.message ?? 'not accepted' });
        return parsed.success ? parsed.data : value;
      });
      keys.push({ key: flag.replace(/^--/, ''), schema, expected: 'true or false', target: { kind: 'crawl', name }, negated: true });
    } else keys.push({ key: flag.replace(/^--/, ''), schema: fileSchemaOf(setting), expected: expectedOf(setting), target: { kind: 'crawl', name } });
  }
  return keys;
}

/** The setting's own schema, after the spellings a file may use: `90s` for a duration, `none` for no limit. */
function fileSchemaOf(setting: CrawlSetting): z.ZodType<unknown> {
  const schema = setting.schema as z.ZodType<unknown>;
  if (setting.kind !== 'integer') return schema;
  return z.preprocess((value) => {
    if (setting.noLimit && value === 'none') return null;
    if (setting.duration && typeof value === 'string') return parseDuration(value) ?? value;
    return value;
  }, schema);
}

function expectedOf(setting: CrawlSetting): string {
  switch (setting.kind) {
    case 'list':
      return 'a list of URLs, e.g. [https://example.org/]';
    case 'choice':
      return `one of ${setting.choices.join(', ')}`;
    case 'other':
      return setting.help;
    case 'integer': {
      const show = (n: number) => (setting.duration ? formatDuration(n) : String(n));
      const range = setting.max === null ? `at least ${show(setting.min)}` : `from ${show(setting.min)} to ${show(setting.max)}`;
      const what = setting.duration ? `a duration (${DURATION_SYNTAX}) ${range}` : `a whole number ${range}`;
      return setting.noLimit ? `${what}, or none (no limit)` : what;
    }
  }
}

export interface ConfigFile {
  readonly path: string;
  /** Crawl settings the file gives, by setting name. */
  readonly crawl: Partial<CrawlConfigInput>;
  /** Daemon options the file gives, by commander attribute. */
  readonly daemon: Readonly<Record<string, unknown>>;
  /** Keys of the file, in file order, each with what it sets. */
  readonly keys: readonly string[];
}

// yaml is loaded only when a config file is read: it is about 290 KB of source that every queue server
// start compiled otherwise (require keeps it out of the bundle; node_modules is there at run time).
let yamlModule: typeof import('yaml') | null = null;
function yamlParser(): typeof import('yaml') {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yamlModule;
}

/** Options of petrel queue-server a config file cannot set: the file itself, and the heap of the process that reads it. */
const COMMAND_LINE_ONLY: ReadonlySet<string> = new Set(['config', 'heap-growth']);

/** Reads and checks a config file; throws an Error whose message names the file, the key and what was expected. */
export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot read the config file ${path}${code === 'ENOENT' ? ': no such file' : `: ${(error as Error).message}`}`);
  }
  // Duplicate keys are an error (yaml's uniqueKeys): which of two values was meant is not for us to guess.
  const document = yamlParser().parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const problem = document.errors[0];
  if (problem !== undefined) throw new Error(`the config file ${path} is not valid YAML: ${problem.message.split('\n')[0]!.replace(/:$/, '')}`);
  const raw: unknown = document.toJS() ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`the config file ${path} must be a mapping of option names to values (e.g. "delay-ms: 2s")`);
  const keys = fileKeys();
  const byKey = new Map(keys.map((key) => [key.key, key]));
  const crawl: Record<string, unknown> = {};
  const daemon: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const spec = byKey.get(key);
    if (spec === undefined) {
      // A switch the file spells by its negation (`no-warc: false` turns archiving on), and the options a
      // file cannot hold (what reads the file, and the process's own heap): said as such, not "unknown".
      if (byKey.get(`no-${key}`)?.negated === true) throw new Error(`the config file ${path}: "${key}" is written "no-${key}" in a config file ("no-${key}: false" turns it on)`);
      if (COMMAND_LINE_ONLY.has(key)) throw new Error(`the config file ${path}: "${key}" is given on the command line only (--${key})`);
      const near = keys.map((k) => k.key).filter((k) => k.replace(/-/g, '') === key.toLowerCase().replace(/[-_]/g, ''));
      throw new Error(`the config file ${path}: unknown key "${key}"${near.length > 0 ? ` (did you mean "${near[0]}"?)` : ''}; keys are the long options of petrel queue-server without "--" (petrel queue-server --help)`);
    }
    const parsed = spec.schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const at = [key, ...issue.path.map(String)].join('.');
      throw new Error(`the config file ${path}: ${at}: ${issue.message}; expected ${spec.expected}, got ${JSON.stringify(value)?.slice(0, 100)}`);
    }
    if (spec.target.kind === 'crawl') crawl[spec.target.name] = parsed.data;
    else daemon[spec.target.attribute] = parsed.data;
  }
  return { path, crawl: crawl as Partial<CrawlConfigInput>, daemon, keys: Object.keys(raw) };
}

/**
 * The daemon options of a command with the config file applied: an option given on the command line
 * wins, else the file's value, else the option's default. Changes the command's values in place.
 */
export function applyDaemonOptions(command: Command, file: ConfigFile | null): void {
  if (file === null) return;
  for (const [attribute, value] of Object.entries(file.daemon)) {
    const source = command.getOptionValueSource(attribute);
    if (source !== 'cli' && source !== 'env') command.setOptionValueWithSource(attribute, value, 'config');
  }
}

/** Where a value came from, for `petrel config print`. */
export type ValueSource = 'command line' | 'config file' | 'crawl.json' | 'default';

export interface EffectiveValue {
  readonly key: string;
  readonly value: unknown;
  readonly source: ValueSource;
}

/**
 * Every key a config file may hold, with the value a queue server started so would use and where it
 * came from. `config`: the settings as validated (crawlSettingsFor); `saved`: crawl.json's settings.
 */
export function effectiveValues(command: Command, file: ConfigFile | null, saved: Readonly<Record<string, unknown>> | null, config: Readonly<Record<string, unknown>>): EffectiveValue[] {
  const out: EffectiveValue[] = [];
  for (const spec of fileKeys()) {
    if (spec.target.kind === 'daemon') {
      const { attribute } = spec.target;
      const source = command.getOptionValueSource(attribute);
      const value = command.getOptionValue(attribute);
      if (value === undefined && source === undefined) continue;
      out.push({ key: spec.key, value: value ?? null, source: source === 'cli' || source === 'env' ? 'command line' : source === 'config' ? 'config file' : 'default' });
      continue;
    }
    const { name } = spec.target;
    const attribute = crawlOptionKeys().find((option) => option.name === name)!.attribute;
    const cli = command.getOptionValueSource(attribute);
    const source: ValueSource =
      cli === 'cli' || cli === 'env' ? 'command line' : file !== null && name in file.crawl ? 'config file' : saved !== null && name in saved ? 'crawl.json' : 'default';
    out.push({ key: spec.key, value: spec.negated === true ? !config[name] : config[name], source });
  }
  return out;
}

/** The keys a config file may hold, for --help. */
export function configKeysHelp(): string {
  return fileKeys()
    .map((key) => key.key)
    .join(', ');
}
