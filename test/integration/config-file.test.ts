/**
 * `petrel queue-server --config FILE` and `petrel config print`, as built (real processes): the file's
 * values are used, options on the command line win over them, the file wins over crawl.json, and
 * crawl.json over the defaults; `config print` names each value's source and prints a file that reads
 * back the same. Unknown keys and bad values are refused (exit 2) with the key's path and what was
 * expected, before anything is created.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminTokenOf } from '../support/admin-api.js';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('the config file', () => {
  beforeAll(() => assertBuilt());
  afterAll(() => killStartedPetrels());

  it('sets the queue server up, the command line overriding it, and config print names every source', async () => {
    const dir = tempDir('config');
    const data = join(dir, 'data');
    const file = join(dir, 'petrel.yaml');
    writeFileSync(file, `# a queue server\ndata: ${data}\nport: 0\nseed:\n  - http://127.0.1.1/docs/\nscope: prefix\ndelay-ms: 2s\nmax-depth: 4\nlease-ms: 90s\n`);
    // Before any run there is no crawl.json: what the file does not give is a default.
    const fresh = JSON.parse((await runPetrel(['config', 'print', '--config', file, '--json'])).stdout) as { key: string; value: unknown; source: string }[];
    expect(fresh.find((entry) => entry.key === 'slot-urls')).toEqual({ key: 'slot-urls', value: 32, source: 'default' });
    expect(fresh.find((entry) => entry.key === 'max-pages')).toEqual({ key: 'max-pages', value: null, source: 'default' });
    expect(fresh.find((entry) => entry.key === 'lease-ms')).toEqual({ key: 'lease-ms', value: 90_000, source: 'config file' });
    expect(existsSync(data)).toBe(false);
    // First run: --max-pages and --delay-ms on the command line; max-pages is then saved in crawl.json.
    const server = startPetrel(['queue-server', '--config', file, '--delay-ms', '250', '--max-pages', '7']);
    const listening = await waitForEvent(server, 'listening');
    expect(String(listening.tokenFile)).toBe(join(data, 'fetcher.token'));
    const status = (await (await fetch(new URL('/api/status', String(listening.url)), { headers: { authorization: `Bearer ${adminTokenOf(listening)}` } })).json()) as {
      config: Record<string, unknown>;
    };
    expect(status.config).toMatchObject({ seeds: ['http://127.0.1.1/docs/'], scope: 'prefix', delayMs: 250, maxDepth: 4, maxPages: 7, leaseMs: 90_000, hostConcurrency: 1 });
    server.kill('SIGTERM');
    expect((await server.output).code).toBe(0);

    // Now: max-pages only in crawl.json, delay-ms in the file and crawl.json (the file wins), lease-ms on the command line.
    const printed = await runPetrel(['config', 'print', '--config', file, '--json', '--lease-ms', '2min']);
    expect(printed.code).toBe(0);
    const entries = new Map((JSON.parse(printed.stdout) as { key: string; value: unknown; source: string }[]).map((entry) => [entry.key, entry]));
    expect(entries.get('data')).toEqual({ key: 'data', value: data, source: 'config file' });
    expect(entries.get('host')).toEqual({ key: 'host', value: '127.0.0.1', source: 'default' });
    expect(entries.get('delay-ms')).toEqual({ key: 'delay-ms', value: 2000, source: 'config file' });
    expect(entries.get('max-pages')).toEqual({ key: 'max-pages', value: 7, source: 'crawl.json' });
    expect(entries.get('lease-ms')).toEqual({ key: 'lease-ms', value: 120_000, source: 'command line' });
    expect(entries.get('seed')).toEqual({ key: 'seed', value: ['http://127.0.1.1/docs/'], source: 'config file' });
    // crawl.json keeps every setting of the last run, so what nothing else gives now comes from there.
    expect(entries.get('slot-urls')).toEqual({ key: 'slot-urls', value: 32, source: 'crawl.json' });

    // The YAML form is a config file: read back, it gives the same values (each now from the file).
    const yaml = await runPetrel(['config', 'print', '--config', file]);
    expect(yaml.stdout).toMatch(/^delay-ms: 2s +# config file$/m);
    expect(yaml.stdout).toMatch(/^max-pages: 7 +# crawl\.json$/m);
    expect(yaml.stdout).toMatch(/^max-depth: 4 +# config file$/m);
    const again = join(dir, 'again.yaml');
    writeFileSync(again, yaml.stdout);
    const reread = JSON.parse((await runPetrel(['config', 'print', '--config', again, '--json'])).stdout) as { key: string; value: unknown; source: string }[];
    expect(reread.map(({ key, value }) => ({ key, value }))).toEqual([...entries.values()].map(({ key, value }) => ({ key, value: key === 'lease-ms' ? 90_000 : value })));
    expect(reread.every((entry) => entry.source === 'config file')).toBe(true);
  }, 60_000);

  it('reads no-warc, no-index and no-sitemaps as their options say: true turns the feature off', async () => {
    const dir = tempDir('config-no');
    const print = async (text: string) => {
      const file = join(dir, `petrel-${Math.random().toString(36).slice(2, 8)}.yaml`);
      writeFileSync(file, `data: ${join(dir, 'data')}\n${text}`);
      const run = await runPetrel(['config', 'print', '--config', file, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const entries = JSON.parse(run.stdout) as { key: string; value: unknown; source: string }[];
      return Object.fromEntries(entries.filter((entry) => entry.key.startsWith('no-')).map((entry) => [entry.key, [entry.value, entry.source]]));
    };
    expect(await print('')).toEqual({ 'no-warc': [false, 'default'], 'no-index': [false, 'default'], 'no-sitemaps': [false, 'default'] });
    expect(await print('no-warc: true\nno-index: true\nno-sitemaps: true\n')).toEqual({ 'no-warc': [true, 'config file'], 'no-index': [true, 'config file'], 'no-sitemaps': [true, 'config file'] });
    expect(await print('no-warc: false\n')).toMatchObject({ 'no-warc': [false, 'config file'] });
    // And the queue server it configures keeps no archive.
    const file = join(dir, 'off.yaml');
    writeFileSync(file, `data: ${join(dir, 'off')}\nport: 0\nno-warc: true\n`);
    const server = startPetrel(['queue-server', '--config', file]);
    await waitForEvent(server, 'listening');
    server.kill('SIGTERM');
    await server.output;
    expect(existsSync(join(dir, 'off', 'warc'))).toBe(false);
  }, 60_000);

  it.each([
    ['an unknown key', 'delay_ms: 2s\n', 'unknown key "delay_ms" (did you mean "delay-ms"?)'],
    ['a duration that is not one', 'delay-ms: 2 weeks\n', 'delay-ms: Invalid input: expected number, received string; expected a duration'],
    ['a value out of bounds', 'host-concurrency: 1000\n', 'host-concurrency: Too big: expected number to be <=256; expected a whole number from 1 to 256, got 1000'],
    ['a wrong type inside a list', 'seed: [1]\n', 'seed.0: Invalid input: expected string, received number'],
    ['a choice not offered', 'scope: planet\n', 'scope: Invalid option: expected one of "prefix"|"host"|"domain"|"any"'],
    ['a key given twice', 'port: 1\nport: 2\n', 'is not valid YAML: Map keys must be unique at line 3, column 1'],
    ['a file that is not a mapping', '- port\n', 'must be a mapping of option names to values'],
    ['a blank data directory', 'data: "   "\n', 'data: Invalid input; expected a directory path'],
    ['a switch spelled by its command-line form', 'warc: true\n', '"warc" is written "no-warc" in a config file ("no-warc: false" turns it on)'],
    ['an option of the command line only', 'heap-growth: 50\n', '"heap-growth" is given on the command line only (--heap-growth)'],
  ])('refuses %s with the key and what was expected, creating nothing', async (_what, text, message) => {
    const dir = tempDir('config-bad');
    const data = join(dir, 'data');
    const file = join(dir, 'petrel.yaml');
    writeFileSync(file, text.startsWith('- ') || text.startsWith('data:') ? text : `data: ${data}\n${text}`);
    const run = await runPetrel(['queue-server', '--config', file, '--port', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`petrel queue-server: the config file ${file}`);
    expect(run.stderr).toContain(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(existsSync(data)).toBe(false);
  });
});
