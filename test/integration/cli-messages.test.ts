/**
 * Every `petrel` command, as a new user meets it, fails with one line that names the file or option
 * and what to do, exits with the documented status (cli/exit-codes.ts), and leaves nothing behind for
 * input it refused: bad options and seeds, a data directory that is a file or on a read-only file
 * system, `npm run crawl URL` without `--`, a busy port, a crawl database with a damaged page or meta
 * page, and a reader that closes the pipe (`| head`). --help shows durations as people write them and
 * lists the exit statuses. Real `petrel` processes throughout.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRAWLDB_PAGE_SIZE, CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { newCrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import { urlHash } from '../../shared/url-hash.js';
import { crashLines } from '../support/clean-output.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, runPetrel, tempDir, type Finished } from '../support/petrel-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The exit statuses README and --help document (cli/exit-codes.ts defines them). */
const EXIT = { ok: 0, failed: 1, usage: 2, nothingFetched: 3, warnings: 4, interrupted: 130 } as const;

/** A failure as promised: the status, one line on stderr naming `mentions`, no stack trace anywhere. */
function expectOneLineFailure(run: Finished, status: number, mentions: RegExp): void {
  expect(run.code, run.stderr).toBe(status);
  expect(crashLines(run.stdout + run.stderr)).toEqual([]);
  const lines = run.stderr.trim().split('\n');
  expect(lines[0]).toMatch(mentions);
}

/** A crawl database of `records` URLs, committed every `commitEvery`; returns its data directory. */
/** A crawl database of `records` new URLs; in its tree (for the tests of damaged pages) unless `inLog`. */
function crawlDbWith(dir: string, records: number, commitEvery = records, inLog = false): string {
  const data = join(dir, `data-${records}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(data, { recursive: true });
  const db = CrawlDb.open(join(data, 'crawldb.btree'), { logEntries: inLog ? undefined : 0 });
  for (let i = 0; i < records; i++) {
    const url = `http://127.0.0.1:9/section-${i % 40}/page-${i}.html`;
    db.put(urlHash(url as never), newCrawlDbRecord(url, i % 7, 1, 1_700_000_000_000, DEFAULT_FETCH_SCHEDULE));
    if (i % commitEvery === commitEvery - 1) db.commit();
  }
  db.commit();
  db.close();
  return data;
}

function flipByte(file: string, offset: number): void {
  const bytes = readFileSync(file);
  bytes[offset]! ^= 0xff;
  writeFileSync(file, bytes);
}

describe('petrel commands refuse bad input with one line and the usage status, creating nothing', () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir('cli-messages');
  });
  afterAll(() => {
    killStartedPetrels();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['crawl', ['crawl', '--no-such-option']],
    ['crawl with a bad number', ['crawl', '--seed', 'http://127.0.0.1:9/', '--fetchers', 'many']],
    ['crawl with a bad duration', ['crawl', '--seed', 'http://127.0.0.1:9/', '--delay-ms', 'soon']],
    ['start', ['start', '--port', '99999']],
    ['queue-server', ['queue-server', '--no-such-option']],
    ['fetcher', ['fetcher', '--no-such-option']],
    ['fetcher without --server', ['fetcher']],
    ['queue-server with a heap growth out of range', ['queue-server', '--port', '0', '--heap-growth', '400']],
    ['fetcher with a heap growth that is no number', ['fetcher', '--server', 'http://127.0.0.1:9', '--heap-growth', 'lots']],
    ['export', ['export', '--format', 'xml']],
    ['btree check without a file', ['btree', 'check']],
    ['db without a subcommand', ['db']],
    ['petrel without a command', []],
  ])('%s: exits 2', async (_name, args) => {
    const run = await runPetrel(args, 20_000);
    expect(run.code, run.stderr).toBe(EXIT.usage);
    expect(crashLines(run.stdout + run.stderr)).toEqual([]);
  });

  it('refuses a seed that is no URL, and leaves no data directory behind', async () => {
    const data = join(dir, 'never-created');
    const run = await runPetrel(['crawl', '--data', data, '--seed', 'ftp://127.0.0.1/x']);
    expectOneLineFailure(run, EXIT.usage, /^petrel crawl: --seed "ftp:\/\/127\.0\.0\.1\/x" is not a crawlable http\(s\) URL/);
    expect(existsSync(data)).toBe(false);
    const start = await runPetrel(['start', '--data', data, '--port', '0', '--seed', 'not a url']);
    expectOneLineFailure(start, EXIT.usage, /^petrel start: --seed "not a url" is not a crawlable/);
    expect(existsSync(data)).toBe(false);
  });

  it('refuses a --resolve it cannot use before anything starts, in crawl, start and fetcher (a crawl whose fetchers refused it waited for ever)', async () => {
    const data = join(dir, 'never-resolved');
    for (const command of ['crawl', 'start']) {
      const run = await runPetrel([command, '--data', data, '--port', '0', '--seed', 'http://127.0.0.1:9/', '--resolve', 'no_underscores.test:127.0.0.1'].filter((arg) => command === 'start' || arg !== '--port' && arg !== '0'));
      expectOneLineFailure(run, EXIT.usage, /^error: option '--resolve <host:address>' argument .* is invalid\. --resolve: "no_underscores\.test" is not a host name/);
      expect(existsSync(data)).toBe(false);
    }
    const fetcher = await runPetrel(['fetcher', '--server', 'http://127.0.0.1:9', '--resolve', 'a.test:not-an-address']);
    expectOneLineFailure(fetcher, EXIT.usage, /--resolve: "not-an-address" is not an IP address/);
  });

  it('refuses a --summary-json it could not write before anything runs, not after the whole crawl', async () => {
    const data = join(dir, 'never-summarized');
    const missing = await runPetrel(['crawl', '--data', data, '--seed', 'http://127.0.0.1:9/', '--summary-json', join(dir, 'no-such-dir', 'summary.json')]);
    expectOneLineFailure(missing, EXIT.usage, /^petrel crawl: --summary-json .*summary\.json: its directory .*no-such-dir does not exist/);
    const directory = await runPetrel(['crawl', '--data', data, '--seed', 'http://127.0.0.1:9/', '--summary-json', dir]);
    expectOneLineFailure(directory, EXIT.usage, /^petrel crawl: --summary-json .*: is a directory: give a file name/);
    expect(existsSync(data)).toBe(false);
  });

  it('answers a failure in JSON too where --json was asked (search, index check, status, config print)', async () => {
    const nowhere = join(dir, 'no-such-data');
    for (const args of [['search', '--data', nowhere, '--json', 'x'], ['index', 'check', '--data', nowhere, '--json']]) {
      const run = await runPetrel(args);
      expect(run.code, args.join(' ')).toBe(EXIT.usage);
      expect(JSON.parse(run.stdout), args.join(' ')).toMatchObject({ ok: false, error: { code: 'usage', message: expect.stringContaining('no data directory at') } });
      expect(run.stderr).toMatch(/no data directory at/);
    }
    const status = await runPetrel(['status', '--json', '--server', 'http://127.0.0.1:9', '--token-file', join(dir, 'missing.token')]);
    expect(status.code).toBe(EXIT.usage);
    expect(JSON.parse(status.stdout)).toMatchObject({ ok: false, error: { code: 'usage', message: expect.stringContaining('cannot read --token-file') } });
    const config = await runPetrel(['config', 'print', '--json', '--config', join(dir, 'missing.yaml')]);
    expect(config.code).toBe(EXIT.usage);
    expect(JSON.parse(config.stdout)).toMatchObject({ ok: false, error: { code: 'usage' } });
    // Without --json, stdout stays empty.
    expect((await runPetrel(['search', '--data', nowhere, 'x'])).stdout).toBe('');
  });

  it('refuses --data naming a file: one line, no stack', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    for (const command of ['crawl', 'start', 'queue-server']) {
      const port = command === 'crawl' ? [] : ['--port', '0'];
      const run = await runPetrel([command, '--data', file, '--seed', 'http://127.0.0.1:9/', ...port]);
      expectOneLineFailure(run, EXIT.usage, new RegExp(`^petrel ${command}: --data .*a-file is a file, not a directory`));
    }
    const exported = await runPetrel(['export', '--data', file]);
    expectOneLineFailure(exported, EXIT.usage, /^petrel export: --data .*a-file is a file, not a directory/);
  });

  it('refuses an unusable --token-file or a TLS file that is no PEM as bad usage (exit 2, so a service manager does not restart for it), creating nothing', async () => {
    const data = join(dir, 'never-created');
    const notPem = join(dir, 'not-pem.txt');
    writeFileSync(notPem, 'not a certificate\n');
    const cases: Array<[string[], RegExp]> = [
      [['--token-file', join(dir, 'no-such-dir', 'tok')], /--token-file .*tok: no such file, and no directory .*no-such-dir to create it in/],
      [['--token-file', dir], /--token-file .* is not a file/],
      [['--tls-cert', notPem, '--tls-key', notPem], /--tls-cert .*not-pem\.txt is not a PEM certificate/],
    ];
    for (const [args, message] of cases) {
      const run = await runPetrel(['queue-server', '--data', data, '--port', '0', ...args]);
      expectOneLineFailure(run, EXIT.usage, message);
    }
    expect(existsSync(data)).toBe(false);
  });

  it('petrel fetcher with no option at all asks for the queue server first, not for a token', async () => {
    expectOneLineFailure(await runPetrel(['fetcher']), EXIT.usage, /^petrel fetcher: give --server URL \(repeatable\) or --cluster/);
  });

  it('names the token file it cannot read or use, and says what is wrong in words', async () => {
    const missing = join(dir, 'no-such.token');
    const fetcher = await runPetrel(['fetcher', '--server', 'http://127.0.0.1:9', '--token-file', missing, '--once']);
    expectOneLineFailure(fetcher, EXIT.usage, /^petrel fetcher: cannot read token file .*no-such\.token \(no such file or directory\): the queue server writes it as <data>\/fetcher\.token$/);
    const short = join(dir, 'short.token');
    writeFileSync(short, 'short\n');
    const status = await runPetrel(['status', '--server', 'http://127.0.0.1:9', '--token-file', short]);
    expectOneLineFailure(status, EXIT.usage, /^petrel status: the admin token \(--token-file .*short\.token\) must be one line/);
    const shortFetcher = await runPetrel(['fetcher', '--server', 'http://127.0.0.1:9', '--token-file', short, '--once']);
    expectOneLineFailure(shortFetcher, EXIT.usage, /^petrel fetcher: the token \(--token-file .*short\.token\) must be one line of 16-512 printable characters/);
    const unread = await runPetrel(['status', '--server', 'http://127.0.0.1:9', '--token-file', missing]);
    expectOneLineFailure(unread, EXIT.usage, /^petrel status: cannot read --token-file .*no-such\.token \(no such file or directory\)$/);
  });

  it('refuses an empty --data (it would put a crawl in the current directory), in every command, and creates nothing', async () => {
    const before = readdirSync(process.cwd()).sort();
    for (const args of [['crawl', '--seed', 'http://127.0.0.1:9/'], ['start', '--port', '0'], ['export'], ['search', 'words'], ['db', 'check'], ['warc', 'index']]) {
      for (const empty of ['', ' ']) {
        const run = await runPetrel([...args, '--data', empty]);
        expectOneLineFailure(run, EXIT.usage, /--data names no directory: give a path/);
      }
    }
    expect(readdirSync(process.cwd()).sort()).toEqual(before);
  });

  it('says "read-only file system", not ENOENT, for a data directory it cannot create, and creates nothing', () => {
    if (spawnSync('unshare', ['-m', 'true']).status !== 0) return; // needs a mount namespace (root, or user namespaces)
    const readOnly = join(dir, 'read-only');
    mkdirSync(readOnly);
    const script = `mount -t tmpfs -o ro tmpfs "$1" && exec "$2" "$3" crawl --data "$1/petrel-data" --seed http://127.0.0.1:9/`;
    const run = spawnSync('unshare', ['-m', 'sh', '-c', script, 'sh', readOnly, process.execPath, PETREL_BIN], { encoding: 'utf8' });
    const finished: Finished = { code: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr };
    expectOneLineFailure(finished, EXIT.usage, /^petrel crawl: cannot create the data directory .*petrel-data in .*read-only \(read-only file system\): choose another --data$/);
    expect(finished.stderr).not.toContain('ENOENT');
  });

  it('hints at the -- of npm run when the URL reaches petrel as a bare argument', () => {
    // `npm run crawl https://...` (or `npm run crawl --seed https://...`, whose --seed npm keeps).
    const run = spawnSync('npm', ['run', '-s', 'crawl', 'http://127.0.0.1:9/'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
    expect(run.status, run.stderr).toBe(EXIT.usage);
    expect(run.stderr).toContain('unexpected argument "http://127.0.0.1:9/": give each seed with --seed');
    expect(run.stderr).toContain('npm run crawl -- --seed http://127.0.0.1:9/');
    expect(crashLines(run.stdout + run.stderr)).toEqual([]);
  });

  describe('a busy port', () => {
    let blocker: Server;
    let port: number;
    beforeAll(async () => {
      blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      port = (blocker.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

    it('is refused with a hint at --port 0, and the data directory this run created is removed', async () => {
      const data = join(dir, 'busy-port');
      const run = await runPetrel(['start', '--data', data, '--port', String(port), '--fetchers', '0']);
      expectOneLineFailure(run, EXIT.failed, new RegExp(`^petrel start: port ${port} on 127\\.0\\.0\\.1 is in use .*--port 0 to take any free port$`));
      expect(existsSync(data)).toBe(false);
      const server = await runPetrel(['queue-server', '--data', data, '--port', String(port)]);
      expectOneLineFailure(server, EXIT.failed, /--port 0/);
      expect(existsSync(data)).toBe(false);
    });
  });
});

describe('petrel db and btree on a damaged crawl database', () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir('cli-damaged');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('db check reports a damaged page as faults (status 1), and --json is JSON; db dump says it in one line', async () => {
    // One commit: no free pages, so every page past the two metas belongs to the tree.
    const data = crawlDbWith(dir, 3000);
    const file = join(data, 'crawldb.btree');
    const stats = JSON.parse((await runPetrel(['btree', 'stats', '--json', file])).stdout) as { pages: number };
    // A page in the middle of the file: a leaf or branch of the tree (pages 0 and 1 are the metas).
    flipByte(file, Math.floor(stats.pages / 2) * CRAWLDB_PAGE_SIZE + 200);

    const check = await runPetrel(['db', 'check', '--data', data]);
    expect(check.code, check.stderr).toBe(EXIT.failed);
    expect(crashLines(check.stdout + check.stderr)).toEqual([]);
    expect(check.stdout).toMatch(/^FAULT btree-page_corrupt: /m);
    expect(check.stdout).toMatch(/fault\(s\): .*crawldb\.btree is damaged/);

    const json = await runPetrel(['db', 'check', '--data', data, '--json']);
    expect(json.code).toBe(EXIT.failed);
    const report = JSON.parse(json.stdout) as { ok: boolean; faults: { code: string }[] };
    expect(report.ok).toBe(false);
    expect(report.faults).toContainEqual(expect.objectContaining({ code: 'btree-page_corrupt' }));

    const dump = await runPetrel(['db', 'dump', '--data', data]);
    expect(dump.code).toBe(EXIT.failed);
    expect(crashLines(dump.stdout + dump.stderr)).toEqual([]);
    expect(dump.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^petrel db dump: .*crawldb\.btree is damaged after \d+ records .*petrel db check --data /)]);
  });

  it('db check --json answers in JSON also when there is no database', async () => {
    const run = await runPetrel(['db', 'check', '--json', '--data', join(dir, 'nothing-here')]);
    expect(run.code).toBe(EXIT.usage);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { code: 'usage', message: expect.stringContaining('no data directory') } });
  });

  it.each([0, 1])('reports a damaged meta page %i as a warning with its own status, and says what a repair does', async (slot) => {
    const data = crawlDbWith(dir, 1200, 400);
    const file = join(data, 'crawldb.btree');
    flipByte(file, slot * CRAWLDB_PAGE_SIZE + 40);
    for (const [args, code] of [[['db', 'check', '--data', data], 'btree-meta_copy_damaged'], [['btree', 'check', file], 'META_COPY_DAMAGED']] as const) {
      const run = await runPetrel([...args]);
      expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(EXIT.warnings);
      expect(crashLines(run.stdout + run.stderr)).toEqual([]);
      expect(run.stdout).toContain(`WARNING ${code}`);
      expect(run.stdout).toContain(`meta page ${slot} is damaged`);
      expect(run.stdout).toContain(`the next commit rewrites page ${slot}`);
      expect(run.stdout).toMatch(/ok, 1 warning$/m);
    }
    const json = JSON.parse((await runPetrel(['btree', 'check', '--json', file])).stdout) as { ok: boolean; warnings: { code: string; page: number }[] };
    expect(json).toMatchObject({ ok: true, warnings: [{ code: 'META_COPY_DAMAGED', page: slot }] });
  });

  it('db dump and db check read the records of the insert log with the tree\'s', async () => {
    const data = crawlDbWith(dir, 500, 500, true);
    expect(readdirSync(data)).toContain('crawldb.inserts-1');
    const dump = await runPetrel(['db', 'dump', '--data', data]);
    expect(dump.code, dump.stderr).toBe(0);
    expect(dump.stdout.trim().split('\n')).toHaveLength(500);
    const check = await runPetrel(['db', 'check', '--json', '--data', data]);
    expect(JSON.parse(check.stdout)).toMatchObject({ ok: true, records: 500 });
  });

  it('db dump | head -3 ends quietly with status 0', () => {
    const data = crawlDbWith(dir, 3000);
    const out = execFileSync('bash', ['-c', 'set -o pipefail; "$0" "$1" db dump --data "$2" | head -3; echo "status ${PIPESTATUS[0]}" >&2', process.execPath, PETREL_BIN, data], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out.trim().split('\n')).toHaveLength(3);
    const both = spawnSync('bash', ['-c', '"$0" "$1" db dump --data "$2" | head -3 >/dev/null; echo "status ${PIPESTATUS[0]}"', process.execPath, PETREL_BIN, data], { encoding: 'utf8' });
    expect(both.stdout.trim()).toBe('status 0');
    expect(both.stderr).toBe('');
  });
});

describe('--help', () => {
  const help = async (...args: string[]) => {
    const run = await runPetrel([...args, '--help'], 20_000);
    expect(run.code).toBe(0);
    return run.stdout.replace(/\n\s{10,}/g, ' ');
  };

  it('shows durations as people write them, and takes them so', async () => {
    const crawl = await help('crawl');
    expect(crawl).toContain('(default: 30d)');
    expect(crawl).toContain('(default: 90d)');
    expect(crawl).toContain('(default: 1s)');
    expect(crawl).not.toMatch(/2592000000|7776000000/);
    const fetcher = await help('fetcher');
    expect(fetcher).toMatch(/--give-up-after <duration> .*\(default: 2min\)/);
    expect(fetcher).toMatch(/--timeout-ms <duration> .*\(default: 30s\)/);
  });

  it('has no "(default: [])", one default for export --all, and btree stats its own exit text', async () => {
    for (const command of ['crawl', 'start', 'queue-server']) expect(await help(command)).not.toContain('(default: [])');
    const exported = await help('export');
    expect(exported.match(/--all .*$/m)![0]).not.toContain('(default: false)');
    const stats = await help('btree', 'stats');
    const check = await help('btree', 'check');
    expect(stats).toContain('Exit status: 0 when the figures were printed');
    expect(stats).not.toContain('1 when the file has faults');
    expect(check).toContain('1 when the file has faults');
  });

  it('gives --data the same default in every command that takes it', async () => {
    for (const args of [['crawl'], ['start'], ['queue-server'], ['export'], ['db', 'check'], ['db', 'dump']]) {
      expect(await help(...args), args.join(' ')).toMatch(/--data <dir> .*\(default: "\.\/petrel-data"\)/);
    }
  });

  it('lists the exit statuses of each command', async () => {
    expect(await help()).toMatch(/Exit status:\n {2}0 {4}done\n {2}1 {4}failed[\s\S]*\n {2}2 {4}bad usage[\s\S]*\n {2}3 {4}the crawl finished, but nothing could be fetched[\s\S]*\n {2}130 {2}interrupted/);
    const crawl = await help('crawl');
    for (const status of ['0', '1', '2', '3', '130']) expect(crawl).toMatch(new RegExp(`\\n {2}${status} +\\S`));
    for (const args of [['start'], ['queue-server'], ['fetcher'], ['export'], ['db', 'check'], ['db', 'dump'], ['btree', 'check'], ['btree', 'stats']]) {
      expect(await help(...args), args.join(' ')).toContain('Exit status:');
    }
    expect(await help('db', 'check')).toMatch(/\n {2}4 {4}the check found no fault, but a warning/);
  });
});
