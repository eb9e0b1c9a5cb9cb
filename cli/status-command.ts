/**
 * `petrel status --server URL`: the admin page's figures on a terminal, once or `--watch`. Reads
 * GET /api/status with the admin token as bearer token. The token comes from `--token-file` or the
 * PETREL_ADMIN_TOKEN environment variable, never from an option's value: a command line is visible to
 * every local user (`ps`) and kept in shell histories.
 *
 * Ages ("heard from 2s ago") are taken against the queue server's own clock (the answer's Date
 * header), the clock its times are in; this command reads no clock.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { formatApproxDuration, formatDuration } from '../shared/duration.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { durationOption, errnoWords, fail, failuresInJson } from './options.js';
import { isWellFormedToken } from '../queue-server/auth/tokens.js';

const NAME = 'status';
const USAGE = { status: EXIT.usage, command: NAME } as const;

interface StatusValues {
  server: string;
  tokenFile?: string;
  ca?: string;
  watch?: boolean;
  interval: number;
  json?: boolean;
}

/** The fields of GET /api/status shown here (crawl/crawl-status.ts has them all). */
interface Status {
  displayState: string;
  pagesFetched: number;
  notModified: number;
  skippedFresh: number;
  errors: number;
  robotsDenied: number;
  requests: number;
  urlsDiscovered: number;
  bytesDownloaded: number;
  linksCut?: number;
  pagesLinksCut?: number;
  pagesTruncated?: number;
  frontierSize: number;
  itemsLeased: number;
  leasesOut: number;
  waitingUrls: number;
  elapsedMs: number;
  pagesPerSecond: number;
  errorsByCode: Record<string, number>;
  hosts: { active: number; waiting: number };
  timeLeft: { ms: number; origin: string; limitedBy: string } | null;
  storageError: { code: string; message: string; attempts: number } | null;
  fetchers: { name: string; address: string; lastSeen: number; itemsLeased: number; pagesFetched: number; stats: { rssBytes: number; inFlight: number; errors: number } }[];
  crawlDbTree: { cacheHits: number; cacheMisses: number; keys: number };
  /** Every URL the crawl database holds, by status (the tree's keys leave out those still in its insert log). Absent from an older queue server's status. */
  urlsByStatus?: Record<string, number>;
  config: { seeds: string[]; scope: string; delayMs: number; leaseMs: number };
}

export function statusCommand(): Command {
  const command = new Command(NAME)
    .description("show a queue server's status (the admin page's figures) on the terminal, once or --watch")
    .requiredOption('--server <url>', 'queue server URL, e.g. http://127.0.0.1:7700')
    .option('--token-file <file>', 'file holding the admin token (<data>/admin.token); or set PETREL_ADMIN_TOKEN')
    .option('--ca <file>', 'CA certificate (PEM) to verify an https:// queue server with')
    .option('--watch', 'print the status again every --interval until Ctrl-C')
    .addOption(new Option('--interval <duration>', 'with --watch: time between two readings').argParser(durationOption('--interval', 500, 3_600_000)).default(2000, formatDuration(2000)))
    .option('--json', 'print the status JSON as the queue server answers it (one line per reading)');
  command.addHelpText('after', `\nThe token is never an option's value: command lines are visible to every user of the machine.\n${exitCodesHelp(['ok', 'failed', 'usage'])}`);
  command.action(async (values: StatusValues) => {
    const token = adminToken(values.tokenFile);
    let url: URL;
    try {
      url = new URL('/api/status', values.server);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
    } catch {
      fail(`--server must be an http(s) URL, got "${values.server}"`, USAGE);
    }
    const ca = values.ca === undefined ? undefined : readCa(values.ca);
    const { Agent } = await import('undici');
    const dispatcher = ca === undefined ? undefined : new Agent({ connect: { ca } });
    const read = async (): Promise<{ status: Status; now: number; text: string }> => {
      let response: Response;
      try {
        response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, ...(dispatcher === undefined ? {} : { dispatcher }) } as RequestInit);
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        fail(`cannot reach the queue server at ${values.server} (${cause?.code ?? cause?.message ?? (error as Error).message})`, { command: NAME });
      }
      const text = await response.text();
      if (response.status === 401) fail(`the queue server refused the admin token (${values.tokenFile ?? 'PETREL_ADMIN_TOKEN'}): is it this queue server's admin.token?`, { command: NAME });
      if (!response.ok) fail(`GET /api/status answered ${response.status}: ${text.slice(0, 200)}`, { command: NAME });
      const date = Date.parse(response.headers.get('date') ?? '');
      return { status: JSON.parse(text) as Status, now: Number.isNaN(date) ? Number.NaN : date, text };
    };
    const clear = process.stdout.isTTY === true && values.watch === true && values.json !== true;
    for (let first = true; ; first = false) {
      const { status, now, text } = await read();
      if (values.json === true) process.stdout.write(`${text.trim()}\n`);
      else process.stdout.write(`${clear ? '\x1b[H\x1b[2J' : first ? '' : '\n'}${render(values.server, status, now)}`);
      if (values.watch !== true) break;
      await new Promise((resolve) => setTimeout(resolve, values.interval));
    }
    process.exit(EXIT.ok);
  });
  return failuresInJson(command);
}

function adminToken(file: string | undefined): string {
  let token: string | undefined;
  if (file !== undefined) {
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (error) {
      fail(`cannot read --token-file ${file} (${errnoWords(error)})`, USAGE);
    }
  } else token = process.env.PETREL_ADMIN_TOKEN?.trim();
  if (token === undefined || token === '') fail("no admin token: pass --token-file FILE (the queue server's <data>/admin.token) or set PETREL_ADMIN_TOKEN", USAGE);
  const from = file === undefined ? 'PETREL_ADMIN_TOKEN' : `--token-file ${file}`;
  if (!isWellFormedToken(token)) fail(`the admin token (${from}) must be one line of 16-512 printable characters: the queue server's <data>/admin.token holds it`, USAGE);
  return token;
}

function readCa(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    fail(`cannot read --ca ${file}: ${(error as Error).message}`, USAGE);
  }
}

/** Text from the web or a fetcher (host names, fetcher names, error text): no control characters reach the terminal. */
function clean(text: string, max = 80): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, max);
}

function render(server: string, s: Status, now: number): string {
  const lines: string[] = [];
  const lookups = s.crawlDbTree.cacheHits + s.crawlDbTree.cacheMisses;
  // elapsedMs: the crawl's time since it started, its whole length once it is done. "running" only while it runs.
  const elapsed = s.displayState === 'running' ? ' for' : s.displayState === 'done' ? ', took' : ', crawl time';
  lines.push(`petrel status of ${clean(server)}: ${s.displayState}${elapsed} ${formatApproxDuration(s.elapsedMs)}`);
  lines.push(`  fetched ${s.pagesFetched} (${s.pagesPerSecond}/s), 304 ${s.notModified}, fresh ${s.skippedFresh}, errors ${s.errors}, robots-denied ${s.robotsDenied}, requests ${s.requests}, ${mib(s.bytesDownloaded)} downloaded`);
  lines.push(`  discovered ${s.urlsDiscovered}, queued ${s.frontierSize}, leased ${s.itemsLeased} in ${s.leasesOut} lease${s.leasesOut === 1 ? '' : 's'}, waiting ${s.waitingUrls}; hosts active ${s.hosts.active}, waiting ${s.hosts.waiting}`);
  const alive = (f: Status['fetchers'][number]) => Number.isNaN(now) || now - f.lastSeen < 2 * s.config.leaseMs;
  if (s.timeLeft !== null) lines.push(`  ~${formatApproxDuration(s.timeLeft.ms)} left for the queued URLs (slowest: ${clean(s.timeLeft.origin)}, limited by ${s.timeLeft.limitedBy})`);
  else if (s.frontierSize > 0 && !s.fetchers.some(alive)) lines.push('  no fetcher alive: the queued URLs wait for one (petrel fetcher --server ... --token-file ...)');
  // Absent from an older queue server's status.
  if ((s.linksCut ?? 0) > 0 || (s.pagesTruncated ?? 0) > 0) lines.push(`  links cut ${s.linksCut ?? 0} on ${s.pagesLinksCut ?? 0} pages (--max-links-per-page), pages cut ${s.pagesTruncated ?? 0} (body limit or parser bound)`);
  const codes = Object.entries(s.errorsByCode).sort((a, b) => b[1] - a[1]).slice(0, 5);
  if (codes.length > 0) lines.push(`  errors by code: ${codes.map(([code, count]) => `${clean(code, 40)} ${count}`).join(', ')}`);
  if (s.storageError !== null) lines.push(`  STORAGE ERROR ${clean(s.storageError.code, 20)}: ${clean(s.storageError.message, 200)} (attempt ${s.storageError.attempts}); the crawl is paused`);
  const known = s.urlsByStatus === undefined ? s.crawlDbTree.keys : Object.values(s.urlsByStatus).reduce((sum, count) => sum + count, 0);
  lines.push(`  crawl db: ${known} URLs, page cache hit rate ${lookups === 0 ? '-' : `${((100 * s.crawlDbTree.cacheHits) / lookups).toFixed(1)} %`}; seeds ${s.config.seeds.length}, scope ${s.config.scope}, delay ${formatDuration(s.config.delayMs)}`);
  lines.push(`  fetchers (${s.fetchers.length}):`);
  for (const f of s.fetchers.slice(0, 50)) {
    const age = Number.isNaN(now) ? '?' : formatApproxDuration(Math.max(0, now - f.lastSeen));
    lines.push(
      `    ${clean(f.name, 40).padEnd(20)} ${clean(f.address, 45).padEnd(16)} ${alive(f) ? 'alive' : 'lost '} heard ${age} ago, leased ${f.itemsLeased}, in flight ${f.stats.inFlight}, pages ${f.pagesFetched}, errors ${f.stats.errors}, ${mib(f.stats.rssBytes)} RSS`,
    );
  }
  if (s.fetchers.length > 50) lines.push(`    ... and ${s.fetchers.length - 50} more`);
  return `${lines.join('\n')}\n`;
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
