/**
 * The crawl settings as options of `petrel queue-server`, `petrel crawl` and `petrel start`: one option
 * for each setting of queue-server/crawl-config.ts that names one, with its help, bounds and default
 * from there (durations in human form: shared/duration.ts); the values go back into crawl settings, or
 * into the arguments of a child queue server.
 *
 * Settings saved in the data directory (crawl.json, saved-settings.ts) are the starting point of a
 * command run on it again; options given on the command line win over them (`crawlSettingsFor`).
 */
import { Option, type Command } from 'commander';
import { formatDuration } from '../shared/duration.js';
import { normalizeUrl } from '../shared/url-normalize.js';
import { CRAWL_SETTINGS, crawlConfigSchema, type CrawlConfig, type CrawlConfigInput, type CrawlSetting, type CrawlSettingName } from '../queue-server/crawl-config.js';
import { EXIT } from './exit-codes.js';
import { collect, durationOption, fail, integerOption } from './options.js';

/** What commander parsed: `seed` plus one value per crawl option, under the option's attribute name. */
export interface CrawlOptionValues {
  readonly seed?: string[];
  readonly [attribute: string]: unknown;
}

/** The value of a limit option that means "no limit" (null in the settings). */
const NO_LIMIT = 'none';

interface CrawlOption {
  readonly name: CrawlSettingName;
  readonly flag: string;
  /** Where commander puts the value (camel case of the flag: --expected-urls is expectedUrls). */
  readonly attribute: string;
  readonly build: () => Option;
}

const CRAWL_OPTIONS: readonly CrawlOption[] = (Object.entries(CRAWL_SETTINGS) as [CrawlSettingName, CrawlSetting][]).flatMap(([name, setting]) => {
  if (setting.option === null) return [];
  const build = () => optionOf(setting, setting.option!);
  const probe = build();
  return [{ name, flag: probe.long!, attribute: probe.attributeName(), build }];
});

/** Each crawl setting that has an option: its name, its long flag (`--delay-ms`) and commander attribute. */
export function crawlOptionKeys(): readonly { readonly name: CrawlSettingName; readonly flag: string; readonly attribute: string }[] {
  return CRAWL_OPTIONS.map(({ name, flag, attribute }) => ({ name, flag, attribute }));
}

/** How --help shows a setting's default: durations as `30d`, `1s`. */
export function helpDefaultOf(setting: CrawlSetting): string | undefined {
  if (setting.kind === 'list') return undefined;
  if (setting.kind === 'integer' && setting.duration && typeof setting.default === 'number') return formatDuration(setting.default);
  return undefined;
}

function optionOf(setting: CrawlSetting, flags: string): Option {
  const noLimit = setting.kind === 'integer' && setting.noLimit;
  const option = new Option(flags, noLimit ? `${setting.help}; ${NO_LIMIT} lifts a limit saved by an earlier run (default: no limit)` : setting.help);
  switch (setting.kind) {
    case 'integer': {
      const parse = setting.duration ? durationOption(option.long!, setting.min, setting.max ?? undefined) : integerOption(option.long!, setting.min, setting.max ?? undefined);
      // commander turns a parser's null into '', so "none" stays a word until valueOf makes it null.
      option.argParser(noLimit ? (value: string) => (value.trim() === NO_LIMIT ? NO_LIMIT : parse(value)) : parse);
      if (setting.default !== null) option.default(setting.default, helpDefaultOf(setting));
      return option;
    }
    case 'choice':
      return option.choices(setting.choices).default(setting.default);
    case 'list':
      // No default shown: "(default: [])" tells nobody anything.
      return option.argParser(collect);
    case 'other':
      // commander shows no default for a --no-x switch; say in words what happens without it.
      if (typeof setting.default === 'boolean' && flags.startsWith('--no-')) return new Option(flags, `${setting.help} (default: ${setting.default ? 'on' : 'off'})`).default(setting.default);
      return option.default(setting.default);
  }
}

export function addCrawlOptions(command: Command): Command {
  for (const option of CRAWL_OPTIONS) {
    command.addOption(option.build());
    // A switch that is on by default (--no-index) can be turned on again over a saved "off" (--index).
    const positive = positiveFlagOf(option);
    if (positive !== null) command.addOption(new Option(positive, `the opposite of ${option.flag} (wins over a saved ${option.flag})`));
  }
  return command;
}

/** `--index` for a `--no-index` switch, else null. */
function positiveFlagOf(option: CrawlOption): string | null {
  return typeof CRAWL_SETTINGS[option.name].default === 'boolean' && option.flag.startsWith('--no-') ? `--${option.flag.slice(5)}` : null;
}

export function crawlConfigFrom(values: CrawlOptionValues, once: boolean): CrawlConfigInput {
  const config: Record<string, unknown> = { once };
  for (const option of CRAWL_OPTIONS) config[option.name] = valueOf(values[option.attribute]);
  return config as CrawlConfigInput;
}

/** An option's value as a setting: "none" of a limit is null. */
function valueOf(value: unknown): unknown {
  return value === NO_LIMIT ? null : value;
}

/** The crawl settings given on the command line itself (not defaults). */
export function explicitCrawlSettings(command: Command): Partial<CrawlConfigInput> {
  const given: Record<string, unknown> = {};
  for (const option of CRAWL_OPTIONS) {
    const source = command.getOptionValueSource(option.attribute);
    if (source === 'cli' || source === 'env') given[option.name] = valueOf(command.getOptionValue(option.attribute));
  }
  return given as Partial<CrawlConfigInput>;
}

/**
 * The settings a command runs with: the defaults, then what the data directory saved from the last
 * run (if anything), then a config file's (`petrel queue-server --config`), then the options given on
 * the command line. Refuses bad seeds and settings with
 * a usage error before anything is started or created.
 */
export function crawlSettingsFor(command: Command, once: boolean, saved: Partial<CrawlConfig> | null, name: string, file: Partial<CrawlConfigInput> | null = null): CrawlConfig {
  const values = command.opts() as CrawlOptionValues;
  // Precedence (README "Operating Petrel"): the command line, then a --config file, then crawl.json, then the defaults.
  const merged = { ...crawlConfigFrom(values, once), ...(saved ?? {}), ...(file ?? {}), ...explicitCrawlSettings(command), once };
  if (merged.seeds === undefined) merged.seeds = [];
  return validCrawlSettings(merged, name);
}

/** The settings, checked: every seed a crawlable URL, every value within its bounds; else a usage error. */
export function validCrawlSettings(input: CrawlConfigInput, name: string): CrawlConfig {
  const usage = { status: EXIT.usage, command: name };
  for (const seed of (input.seeds ?? []) as string[]) {
    const normalized = normalizeUrl(seed);
    if (!normalized.ok) fail(`--seed "${seed.slice(0, 200)}" is not a crawlable http(s) URL (${normalized.code}), e.g. --seed https://example.org/`, usage);
  }
  const parsed = crawlConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    fail(`setting ${issue.path.join('.')}: ${issue.message}`, usage);
  }
  return parsed.data;
}

/** The same settings as command-line arguments, for a child `petrel queue-server`. */
export function crawlArgsFrom(config: CrawlConfig): string[] {
  const args: string[] = [];
  for (const option of CRAWL_OPTIONS) {
    const value = config[option.name];
    if (value === undefined) continue;
    // No limit is said so, or the child would take a limit saved in the data directory.
    if (value === null) {
      args.push(option.flag, NO_LIMIT);
      continue;
    }
    if (typeof value === 'boolean') {
      // A switch: --no-index or --index (said either way, so a saved value does not win).
      args.push(value ? (positiveFlagOf(option) ?? option.flag) : option.flag);
      continue;
    }
    for (const one of Array.isArray(value) ? value : [value]) args.push(option.flag, String(one));
  }
  return args;
}
