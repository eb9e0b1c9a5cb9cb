/**
 * `petrel crawl`: a one-shot crawl on this machine. Starts a queue server and N fetcher child
 * processes (the same programs a fleet runs, talking HTTP on loopback), shows progress, prints the
 * summary and what to do next, and exits with the status of exit-codes.ts: 0 when the frontier is
 * empty and no schedule is out, 3 when nothing at all could be fetched, 130 when interrupted.
 *
 * Order of events, so that no process waits on one that is not there yet or gone already: the seeds
 * and options are checked (nothing is created for refused input); the listening socket is opened
 * here and the queue server inherits it, so the first fetcher starts at the same time and waits in its
 * backlog, the others once the queue server listens (where the socket cannot be handed on, all start
 * then). When the crawl is over, the queue server says so (`crawl-over`) and keeps answering until
 * the fetchers are gone and progress has shown the end; then it is told to exit and writes the summary.
 * Ctrl-C stops the fetchers first (they deliver what they hold), then the queue server, and running the
 * same command again resumes the pass.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { formatApproxDuration } from '../shared/duration.js';
import { resolve } from 'node:path';
import { createServer } from 'node:net';
import { createLogger, sayer } from '../shared/logger.js';
import { Command } from 'commander';
import type { CrawlSummary } from '../queue-server/crawl/crawl-stats.js';
import type { HostHealth } from '../queue-server/frontier/host-backoff.js';
import type { PageLimitReached } from '../queue-server/crawl/crawl-status.js';
import type { LoadedCrawl } from '../queue-server/crawl/crawl.js';
import type { CrawlPass } from '../queue-server/crawl/crawl-pass.js';
import { loadOrCreateToken } from '../queue-server/auth/tokens.js';
import { dataPath, ensureDataDir } from '../queue-server/storage/data-dir.js';
import { addCrawlOptions, crawlArgsFrom, crawlSettingsFor, type CrawlOptionValues } from './crawl-options.js';
import { eachLine, exited, spawnPetrel } from './children.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { FetcherChildren } from './fetcher-children.js';
import { localFetcherSettingsFor, saveLocalFetcherSettings } from './local-fetcher-settings.js';
import { addFetcherOptions, fetcherArgs, type LocalFetcherValues } from './fetcher-options.js';
import { checkWritableDataDir, DATA_OPTION, fail, integerOption, writableFileProblem } from './options.js';
import { loadSaved } from './queue-server-command.js';

interface CrawlValues extends CrawlOptionValues, LocalFetcherValues {
  data: string;
  fetchers: number;
  summaryJson?: string;
  progress: boolean;
}

/** A fetcher that fails is started again at most this many times. */
const FETCHER_RESTARTS = 3;
/**
 * Once the crawl is over, how long progress may take to show the end, ms: seconds under load, so this
 * only keeps a stream that never opened from holding the crawl up.
 */
const PROGRESS_END_MS = 10_000;

const NAME = 'crawl';

export function crawlCommand(): Command {
  const command = new Command(NAME)
    .description('crawl from the given seeds with a local queue server and N fetcher processes, then print a summary')
    .option(DATA_OPTION.flags, 'data directory for this crawl (run again on it: resumes an unfinished pass, else recrawls what changed)', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--fetchers <n>', 'fetcher processes to start', integerOption('--fetchers', 1, 64), 2)
    .option('--summary-json <file>', 'also write the summary JSON to this file')
    .option('--no-progress', 'do not show live progress on stderr')
    .allowExcessArguments(true);
  addFetcherOptions(command, 'local');
  addCrawlOptions(command);
  command.addHelpText(
    'after',
    '\nExample:\n  petrel crawl --seed https://example.org/docs/index.html --scope prefix --fetchers 2 --summary-json summary.json\n' +
      '  (with npm: npm run crawl -- --seed https://example.org/ ; the -- keeps npm from taking the options)\n' +
      '\nRun again on the same --data without --seed, it takes the seeds and settings saved in <data>/crawl.json.\n' +
      exitCodesHelp(['ok', 'failed', 'usage', 'nothingFetched', 'interrupted']),
  );
  command.action(async (values: CrawlValues) => {
    const usage = { status: EXIT.usage, command: NAME };
    const stray = command.args;
    if (stray.length > 0) {
      const underNpm = process.env.npm_lifecycle_event !== undefined;
      const example = /^https?:\/\//i.test(stray[0]!) ? stray[0]! : 'https://example.org/';
      fail(
        `unexpected argument "${stray[0]!.slice(0, 200)}": give each seed with --seed, e.g. petrel crawl --seed ${example}` +
          (underNpm ? `\nWith npm run, put -- before petrel's options, or npm takes them for its own: npm run crawl -- --seed ${example}` : ''),
        usage,
      );
    }
    checkWritableDataDir(values.data, NAME);
    // Found now, not after the whole crawl: the file the summary is written to at the end.
    if (values.summaryJson !== undefined) {
      const problem = writableFileProblem(values.summaryJson);
      if (problem !== null) fail(`--summary-json ${values.summaryJson}: ${problem}`, usage);
    }
    const saved = loadSaved(values.data, NAME);
    const config = crawlSettingsFor(command, true, saved?.settings ?? null, NAME);
    if (config.seeds.length === 0) {
      fail('nothing to crawl: give at least one --seed URL, e.g.\n  petrel crawl --seed https://example.org/ --scope host\n(see petrel crawl --help for every option)', usage);
    }
    // The local fetchers' settings of the last run on this data directory, unless given again.
    const fetcherSettings = localFetcherSettingsFor(command, values, values.data, NAME);
    if (fetcherSettings.goOnWith !== null) process.stderr.write(`petrel crawl: fetchers ${fetcherSettings.goOnWith}\n`);
    const outcome = await runCrawl({ ...values, ...fetcherSettings.values }, crawlArgsFrom(config));
    const text = JSON.stringify(outcome.summary, null, 2);
    process.stdout.write(`${text}\n`);
    if (values.summaryJson !== undefined) writeFileSync(values.summaryJson, `${text}\n`);
    const status = outcome.interrupted ? EXIT.interrupted : nothingFetched(outcome.summary) ? EXIT.nothingFetched : EXIT.ok;
    process.stderr.write(nextSteps(values.data, outcome.summary, status));
    process.exit(status);
  });
  return command;
}

/** Not one page fetched, revalidated or found fresh, and something was tried: every attempt failed or was refused. */
export function nothingFetched(summary: CrawlSummary): boolean {
  return summary.pagesFetched + summary.notModified + summary.skippedFresh === 0 && summary.errors + summary.robotsDenied > 0;
}

/** The end of a crawl, for people: what happened in one line, where the data is, and what to do next. */
function nextSteps(dataDir: string, summary: CrawlSummary, status: number): string {
  const dir = resolve(dataDir);
  // Started as the README's first command (npm run crawl, npm run demo), `petrel` is likely not on the
  // PATH yet: the hints say what runs as typed there.
  const petrel = ['crawl', 'demo'].includes(process.env.npm_lifecycle_event ?? '') ? 'npm run -s petrel --' : 'petrel';
  const data = dataDir === DATA_OPTION.default ? '' : ` --data ${dataDir}`;
  const byCode = Object.entries(summary.errorsByCode).sort((a, b) => b[1] - a[1]);
  // The three most frequent codes, and how many errors the others add (the summary's errorsByCode has them all).
  const others = byCode.slice(3).reduce((sum, [, n]) => sum + n, 0);
  const errors =
    byCode
      .slice(0, 3)
      .map(([code, n]) => `${code} ${n}`)
      .join(', ') + (others > 0 ? `, ${count(others, 'other')} in errorsByCode` : '');
  const what =
    `${count(summary.pagesFetched, 'page')} fetched, ${summary.notModified} not modified, ${count(summary.errors, 'error')}${errors === '' ? '' : ` (${errors})`}, ` +
    `${count(summary.robotsDenied, 'URL')} refused by robots.txt`;
  const head =
    status === EXIT.interrupted
      ? `petrel crawl: interrupted: ${what}. Run the same command again to resume the pass.`
      : status === EXIT.nothingFetched
        ? `petrel crawl: finished, but nothing could be fetched: ${what}. Is the seed reachable from here?`
        : `petrel crawl: done: ${what}.`;
  // What the pass gave up on: hosts whose requests kept failing (queue-server/frontier/host-backoff.ts).
  const gaveUp = ((summary as { backedOffHosts?: HostHealth[] }).backedOffHosts ?? []).filter((host) => host.gaveUp);
  const given = gaveUp.map((host) => `  gave up on:      ${host.origin} (${whyGivenUp(host)}): ${count(host.givenUpUrls, 'URL')} recorded host-failing\n`).join('');
  // What bounds left out: links past --max-links-per-page, pages cut at --max-body-bytes or the parser's bound.
  const cut =
    (summary.linksCut > 0 ? `  links cut:       ${count(summary.linksCut, 'link')} on ${count(summary.pagesLinksCut, 'page')} past --max-links-per-page, not followed (raise it to follow them)\n` : '') +
    (summary.pagesTruncated > 0 ? `  pages cut:       ${count(summary.pagesTruncated, 'page')} cut at --max-body-bytes or the HTML parser's work bound; links past the cut were not seen\n` : '') +
    pageLimitLine(summary, petrel, data);
  return (
    `${head}\n` +
    given +
    cut +
    `  data:            ${dir}\n` +
    `  page records:    ${petrel} export${data} > pages.jsonl\n` +
    `  every URL known: ${petrel} db dump${data}   (${petrel} db check${data} verifies the database)\n` +
    (existsSync(dataPath(dataDir, 'index')) ? `  search:          ${petrel} search${data} 'some words'   (or --public-search on ${petrel} start for a search page)\n` : '') +
    (summary.warcRecords > 0 ? `  web archive:     ${petrel} export${data} --format warc > crawl.warc.gz   (${petrel} warc get${data} URL prints one response)\n` : '') +
    `  run again:       ${petrel} crawl${data}   (resumes an unfinished pass, else recrawls what changed)\n`
  );
}

/** Why a host was given up, for people: failures in a row, or a Retry-After longer than the crawl waits. */
function whyGivenUp(host: HostHealth): string {
  if (host.waitAskedMs != null) return `${host.code} with Retry-After ${formatApproxDuration(host.waitAskedMs)}, longer than a one-shot crawl waits`;
  return `${host.code} ${host.failuresInRow} times in a row`;
}

/**
 * The pass stopped at --max-pages with URLs still queued. The limit is saved with the crawl, and each
 * pass spends it on the URLs due first (revalidations too): said, so nobody waits for a next pass
 * that fetches the same pages again.
 */
function pageLimitLine(summary: CrawlSummary, petrel: string, data: string): string {
  const limit = (summary as { pageLimit?: PageLimitReached | null }).pageLimit ?? null;
  if (limit === null) return '';
  return `  page limit:      --max-pages ${limit.maxPages} reached with ${count(limit.queuedLeft, 'URL')} still queued; the limit is saved with the crawl, so the next pass has it too (${petrel} crawl${data} --max-pages none fetches them all)\n`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

interface CrawlOutcome {
  readonly summary: CrawlSummary;
  readonly interrupted: boolean;
}

interface ListeningEvent {
  readonly url: string;
  readonly tokenFile: string;
  readonly loaded: LoadedCrawl;
  readonly pass: { pass: CrawlPass; resumed: boolean } | null;
}

async function runCrawl(values: CrawlValues, settingsArgs: string[]): Promise<CrawlOutcome> {
  // The token and the listening socket are settled here first. The queue server inherits the
  // socket, so the fetchers start at the same time: one that connects before the queue server is
  // ready waits in its backlog instead of failing and backing off.
  ensureDataDir(values.data);
  saveLocalFetcherSettings(values.data, values);
  const tokenFile = dataPath(values.data, 'token');
  loadOrCreateToken(tokenFile);
  const socket = await listeningLoopbackSocket();
  const serverUrl = `http://127.0.0.1:${socket.port}`;
  const where = socket.fd === null ? ['--port', String(socket.port)] : ['--listen-fd', '3'];
  const server = spawnPetrel(['queue-server', '--data', values.data, ...where, '--once', ...settingsArgs], socket.fd === null ? [] : [socket.fd]);
  // The child has its own copy now; this process must never accept on it.
  await socket.close();
  let summary: CrawlSummary | null = null;
  let onCrawlOver!: () => void;
  const crawlOver = new Promise<void>((resolveOver) => (onCrawlOver = resolveOver));
  const listening = new Promise<ListeningEvent>((resolveListening) => {
    eachLine(server.stdout, (line) => {
      const event = parseEvent(line);
      if (event?.event === 'listening') resolveListening(event as unknown as ListeningEvent);
      if (event?.event === 'crawl-over') onCrawlOver();
      if (event?.event === 'finished' || event?.event === 'stopped') summary = event.summary as CrawlSummary;
    });
  });
  eachLine(server.stderr, (line) => {
    if (!line.startsWith('petrel queue-server listening')) process.stderr.write(`${line}\n`);
  });
  const serverExit = exited(server);

  // The crawl's own messages (its progress display stays plain text for people: progress.ts).
  const logger = createLogger({ role: 'crawl' });
  let interrupted = false;
  /** Every fetcher exited for good before the crawl was over: the queue server is stopped, the crawl failed. */
  let fetchersGone = false;
  // Typed by its initializer: it is assigned in closures, which narrowing does not follow.
  let fetchers = null as FetcherChildren | null;
  const interrupt = () => {
    if (interrupted) {
      // A second Ctrl-C: do not wait for held slots (their URLs are fetched again on resume).
      logger.warn({ event: 'stopping-now', say: true }, 'petrel crawl: stopping now');
      fetchers?.kill();
      server.kill('SIGTERM');
      return;
    }
    interrupted = true;
    logger.warn({ event: 'interrupted', say: true }, '\npetrel crawl: interrupted: stopping the fetchers (they deliver what they hold; Ctrl-C again to stop at once), then the queue server');
    void (async () => {
      await fetchers?.stop();
      server.kill('SIGTERM');
    })();
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  // The terminal went away (an SSH session closed): stopped in order, resumable, as for Ctrl-C.
  process.on('SIGHUP', interrupt);

  const startFetchers = (count: number) => {
    fetchers ??= new FetcherChildren({
      label: 'petrel crawl',
      namePrefix: 'fetcher',
      args: (name) => [...fetcherArgs(values, { serverUrl, tokenFile, name }), '--once'],
      restart: { kind: 'limited', restarts: FETCHER_RESTARTS },
      log: sayer(logger, 'fetcher-children', 'warn'),
      onNoneLeft: () => {
        if (interrupted) return;
        fetchersGone = true;
        logger.error({ event: 'fetchers-gone', say: true }, 'petrel crawl: every fetcher has exited (see their messages above) and none is started again: stopping the queue server');
        server.kill('SIGTERM');
      },
    });
    fetchers.start(count);
  };
  // With the socket inherited, one fetcher starts beside the queue server and waits in its backlog,
  // the others once it listens: started all at once, they would share the cores with the queue
  // server's own start, which is what the first request waits for. Without the socket, all start once
  // the queue server listens, so none of them finds it not there yet.
  if (socket.fd !== null) startFetchers(1);
  const started = await Promise.race([listening, serverExit.then(() => null)]);
  if (started === null) {
    await fetchers?.stop();
    fail('the queue server did not start (see the message above)', { command: NAME });
  }
  process.stderr.write(startLine(started));
  // Progress is for people: they may want the admin page, or `petrel status`, of a long crawl.
  if (values.progress) process.stderr.write(`petrel crawl: queue server on ${started.url}, admin page ${started.url}/admin (the token is in ${resolve(dataPath(values.data, 'adminToken'))})\n`);
  if (interrupted) server.kill('SIGTERM');
  else startFetchers(fetchers === null ? values.fetchers : values.fetchers - 1);

  // Loaded once the children run: progress.ts polls through the fetcher's QueueClient, whose undici
  // is about 1 MB of the bundle that this process would otherwise compile before spawning anything.
  const progress = values.progress ? (await import('./progress.js')).followProgress(started.url, readFileSync(started.tokenFile, 'utf8').trim(), process.stderr) : null;
  // The crawl is over and the queue server still answers, until it is told to go (children.ts): first
  // the fetchers go and progress shows the end (the last robots.txt lines), then the queue server
  // writes the summary and exits. So no fetcher finds its queue server missing. The fetchers are
  // stopped at once (SIGTERM: a fetcher finishes and delivers what it holds, and at the end of a crawl
  // none holds anything) rather than left to claim, be told `done` and exit by themselves: a fetcher
  // still starting (the second one starts once the queue server listens, and took 0.6 s to start
  // beside a running crawl) held the end of a three-page crawl 0.45 s after its last result.
  void crawlOver.then(async () => {
    await Promise.all([fetchers?.stop(), progress?.shownEnd(PROGRESS_END_MS)]);
    server.kill('SIGTERM');
  });
  const serverStatus = await serverExit;
  progress?.stop();
  // The queue server gone otherwise (interrupted, or it failed): the fetchers are stopped if they are not yet.
  await fetchers?.stop();
  if (fetchersGone) fail('the crawl stopped before it finished: no fetcher was left to fetch (run the same command again to resume the pass)', { command: NAME });
  if (summary === null || (serverStatus !== 0 && !interrupted)) fail(`the queue server exited with status ${serverStatus} before the crawl finished`, { command: NAME });
  return { summary, interrupted };
}

/** What the queue server found in the data directory: a new crawl, a resumed pass, or a new pass over what is known. */
function startLine(started: ListeningEvent): string {
  const { pass, loaded } = started;
  if (pass === null) return '';
  if (pass.resumed) return `petrel crawl: resuming pass ${pass.pass.number}: ${loaded.fetched} fetched, ${loaded.queued + loaded.waiting} queued\n`;
  if (loaded.known === 0) return '';
  // Seeds given again replace the saved ones: what only the old seeds reached is not recrawled.
  const leftOut = loaded.leftOut > 0 ? `; ${loaded.leftOut} of them, due now, are outside the scope of the seeds or deeper than --max-depth: left as they are (not fetched, still in the crawl database and the search index)` : '';
  // Under --max-pages, pages fetched before are not due until their next fetch time (crawl-pass.ts dueAt): counted as fetched.
  if (loaded.fetched > 0) return `petrel crawl: pass ${pass.pass.number}: ${loaded.queued + loaded.waiting} of the ${loaded.known} URLs known are due (never fetched, or their next fetch time has come); with --max-pages the ${loaded.fetched} pages fetched before wait for theirs${leftOut}\n`;
  return `petrel crawl: pass ${pass.pass.number}: recrawling the ${loaded.known} URLs known (fresh ones are skipped, stale ones revalidated)${leftOut}\n`;
}

function parseEvent(line: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A socket bound to a free port of 127.0.0.1 and listening, with its file descriptor for a child to
 * inherit. Node does not document a server's descriptor; where it has none to give (`fd` null) the
 * socket is closed and only its port is passed on, as before: the queue server binds it again, and
 * fetchers that ask too early retry.
 */
function listeningLoopbackSocket(): Promise<{ port: number; fd: number | null; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = createServer();
    socket.once('error', reject);
    socket.listen(0, '127.0.0.1', () => {
      const { port } = socket.address() as { port: number };
      const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
      const close = () => new Promise<void>((done) => socket.close(() => done()));
      if (typeof fd === 'number' && fd >= 0) resolve({ port, fd, close });
      else void close().then(() => resolve({ port, fd: null, close: async () => undefined }));
    });
  });
}
