/**
 * Every crawl setting has one definition (queue-server/crawl-config.ts, CRAWL_SETTINGS). What this
 * protects: the defaults and bounds people meet in each place come from it and cannot drift apart: the
 * zod schema, the --help of `petrel queue-server`, `crawl` and `start` and the values those commands
 * pass on, the admin form's settings answer, and what a fresh queue server shows the form; "no limit"
 * is null in each of them.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawlCommand } from '../../cli/crawl-command.js';
import { crawlArgsFrom, crawlConfigFrom, explicitCrawlSettings } from '../../cli/crawl-options.js';
import { queueServerCommand } from '../../cli/queue-server-command.js';
import { startCommand } from '../../cli/start-command.js';
import { CRAWL_SETTINGS, crawlConfigSchema, formSettings, type CrawlSetting, type CrawlSettingName } from '../../queue-server/crawl-config.js';
import { startQueueServer, type RunningQueueServer } from '../../queue-server/daemon.js';
import { tempDir } from '../support/petrel-process.js';
import { formatDuration } from '../../shared/duration.js';

const DEFAULTS = crawlConfigSchema.parse({});
const SETTINGS = Object.entries(CRAWL_SETTINGS) as [CrawlSettingName, CrawlSetting][];
const WITH_OPTION = SETTINGS.filter(([, setting]) => setting.option !== null);
const COMMANDS: [string, () => Command][] = [
  ['queue-server', queueServerCommand],
  ['crawl', crawlCommand],
  ['start', startCommand],
];

function optionOf(command: Command, setting: CrawlSetting): Option {
  const flag = setting.option!.split(' ')[0]!;
  const option = command.options.find((candidate) => candidate.long === flag);
  if (option === undefined) throw new Error(`${command.name()} has no ${flag}`);
  return option;
}

/** The line of --help that documents `flag` (commander wraps long descriptions; they are joined back). */
function helpOf(command: Command, flag: string): string {
  const help = command.helpInformation().replace(/\n\s{10,}/g, ' ');
  const line = help.split('\n').find((text) => text.trim().startsWith(`${flag} `));
  if (line === undefined) throw new Error(`--help of ${command.name()} does not list ${flag}`);
  return line;
}

describe('the crawl settings table', () => {
  it('gives the schema its defaults, with null for no limit', () => {
    for (const [name, setting] of SETTINGS) expect({ name, value: DEFAULTS[name] }).toEqual({ name, value: setting.default });
    expect(DEFAULTS.maxDepth).toBeNull();
    expect(DEFAULTS.maxPages).toBeNull();
  });

  it.each(COMMANDS)('gives `petrel %s` one option per setting that names one, with the same default in --help and in the settings it passes on', (_name, make) => {
    const command = make();
    for (const [name, setting] of WITH_OPTION) {
      const option = optionOf(command, setting);
      const help = helpOf(command, option.long!);
      if (setting.default === null) {
        expect(option.defaultValue).toBeUndefined();
        expect(help).toContain('(default: no limit)');
      } else if (setting.kind === 'list') {
        // A list starts empty; "(default: [])" would tell nobody anything.
        expect(option.defaultValue).toBeUndefined();
        expect(help).not.toContain('(default:');
      } else if (option.negate) {
        // A switch that is on by default (--no-index): its help says so in words, --index turns it on over a saved value.
        expect({ name, default: option.defaultValue }).toEqual({ name, default: setting.default });
        expect(help).toContain(`(default: ${setting.default === true ? 'on' : 'off'})`);
        expect(command.options.some((other) => other.long === `--${option.long!.slice(5)}`)).toBe(true);
      } else {
        expect({ name, default: option.defaultValue }).toEqual({ name, default: setting.default });
        // Durations are shown as people write them (30d, 1s), and the option takes that form too.
        const shown = setting.kind === 'integer' && setting.duration ? formatDuration(setting.default as number) : JSON.stringify(setting.default);
        expect(help).toContain(`default: ${shown})`);
        if (setting.kind === 'integer' && setting.duration) expect(option.parseArg!(shown, undefined)).toBe(setting.default);
      }
    }
    // Without any option given, the command's values become exactly the default settings.
    const passedOn = crawlConfigSchema.parse(crawlConfigFrom(command.opts() as never, false));
    expect(passedOn).toEqual(DEFAULTS);
  });

  it.each(COMMANDS)('refuses in `petrel %s` what the schema refuses: below the minimum, above the maximum', (_name, make) => {
    const command = make();
    for (const [name, setting] of WITH_OPTION) {
      if (setting.kind !== 'integer') continue;
      const parse = optionOf(command, setting).parseArg!;
      expect(() => parse(String(setting.min), undefined)).not.toThrow();
      if (setting.min > 0) {
        expect(() => parse(String(setting.min - 1), undefined), name).toThrow();
        expect(crawlConfigSchema.safeParse({ [name]: setting.min - 1 }).success, name).toBe(false);
      }
      if (setting.max !== null) {
        const above = setting.max + 1;
        expect(() => parse(String(above), undefined), name).toThrow();
        expect(crawlConfigSchema.safeParse({ [name]: above }).success, name).toBe(false);
      }
    }
  });
});

describe('settings saved by an earlier run', () => {
  it.each(COMMANDS)('can be lifted in `petrel %s` with "none" for a limit, and a child queue server is told so', (_name, make) => {
    for (const [name, setting] of WITH_OPTION) {
      if (setting.kind !== 'integer' || !setting.noLimit) continue;
      const command = make();
      command.parseOptions([setting.option!.split(' ')[0]!, 'none']);
      expect({ name, given: explicitCrawlSettings(command)[name], value: crawlConfigFrom(command.opts() as never, false)[name] }).toEqual({ name, given: null, value: null });
    }
    const args = crawlArgsFrom(crawlConfigSchema.parse({ seeds: ['http://127.0.0.1:9/'], maxDepth: null, maxPages: 5 }));
    expect(args.join(' ')).toContain('--max-depth none');
    expect(args.join(' ')).toContain('--max-pages 5');
  });
});

describe('the admin form', () => {
  let dir: string;
  let server: RunningQueueServer;
  let cookie: string;

  beforeAll(async () => {
    dir = tempDir('crawl-settings');
    server = await startQueueServer({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, crawl: {} });
    const adminToken = readFileSync(server.adminTokenFile, 'utf8').trim();
    const login = await request(server.url).post('/admin/login').set('Origin', server.url).type('form').send({ token: adminToken }).expect(303);
    cookie = (login.headers['set-cookie'] as unknown as string[]).find((line) => line.startsWith('petrel_admin='))!.split(';')[0]!;
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gets the settings it offers from the table: defaults, bounds, choices, no limit as null', async () => {
    const answer = await request(server.url).get('/admin/api/settings').set('Cookie', cookie).expect(200);
    const expected = formSettings().map(([name, setting]) => ({
      name,
      kind: setting.kind,
      default: setting.default,
      ...(setting.kind === 'integer' ? { min: setting.min, max: setting.max, noLimit: setting.noLimit } : {}),
      ...(setting.kind === 'choice' ? { choices: [...setting.choices] } : {}),
    }));
    expect(answer.body.settings.map(({ help: _help, ...setting }: Record<string, unknown>) => setting)).toEqual(expected);
    for (const setting of answer.body.settings) expect(setting.default).toEqual(DEFAULTS[setting.name as CrawlSettingName]);
  });

  it('is filled by a fresh queue server with the same defaults', async () => {
    const status = await request(server.url).get('/admin/api/status').set('Cookie', cookie).expect(200);
    for (const [name] of formSettings()) expect({ name, value: status.body.config[name] }).toEqual({ name, value: DEFAULTS[name] });
  });

  it('has a field for each setting it offers, and no bounds or defaults of its own in the page', () => {
    const html = readFileSync(new URL('../../queue-server/admin/static/index.html', import.meta.url), 'utf8');
    const form = /<form id="crawl-form"[\s\S]*?<\/form>/.exec(html)![0];
    const fields = [...form.matchAll(/id="f-([A-Za-z]+)"/g)].map((match) => match[1]).sort();
    expect(fields).toEqual(formSettings().map(([name]) => name).sort());
    const numberInputs = [...form.matchAll(/<input [^>]*type="number"[^>]*>/g)].map((match) => match[0]);
    for (const input of numberInputs) expect(input).not.toMatch(/\b(min|max|placeholder|value)=/);
  });
});
