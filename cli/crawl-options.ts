/**
 * The crawl settings as options of `petrel queue-server`, `petrel crawl` and `petrel start`: one option
 * for each setting of queue-server/crawl-config.ts that names one, with its help, bounds and default
 * from there; the values go back into crawl settings, or into the arguments of a child queue server.
 */
import { Option, type Command } from 'commander';
import { CRAWL_SETTINGS, type CrawlConfigInput, type CrawlSetting, type CrawlSettingName } from '../queue-server/crawl-config.js';
import { collect, integerOption } from './options.js';

/** What commander parsed: `seed` plus one value per crawl option, under the option's attribute name. */
export interface CrawlOptionValues {
  readonly seed: string[];
  readonly [attribute: string]: unknown;
}

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

function optionOf(setting: CrawlSetting, flags: string): Option {
  const noLimit = setting.kind === 'integer' && setting.default === null;
  const option = new Option(flags, noLimit ? `${setting.help} (default: no limit)` : setting.help);
  switch (setting.kind) {
    case 'integer':
      option.argParser(integerOption(option.long!, setting.min, setting.max ?? undefined));
      if (setting.default !== null) option.default(setting.default);
      return option;
    case 'choice':
      return option.choices(setting.choices).default(setting.default);
    case 'list':
      return option.argParser(collect).default([]);
    case 'other':
      return option.default(setting.default);
  }
}

export function addCrawlOptions(command: Command): Command {
  for (const option of CRAWL_OPTIONS) command.addOption(option.build());
  return command;
}

export function crawlConfigFrom(values: CrawlOptionValues, once: boolean): CrawlConfigInput {
  const config: Record<string, unknown> = { once };
  for (const option of CRAWL_OPTIONS) config[option.name] = values[option.attribute];
  return config as CrawlConfigInput;
}

/** The same options as command-line arguments, for a child `petrel queue-server`. */
export function crawlArgsFrom(values: CrawlOptionValues): string[] {
  const args: string[] = [];
  for (const option of CRAWL_OPTIONS) {
    const value = values[option.attribute];
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) args.push(option.flag, String(one));
  }
  return args;
}
