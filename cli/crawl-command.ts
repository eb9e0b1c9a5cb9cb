/**
 * `petrel crawl`: a one-shot crawl on this machine. Starts a queue server and N fetcher child
 * processes (the same programs a fleet runs, talking HTTP on loopback), shows progress, and exits 0
 * when the frontier is empty and no schedule is out, printing the summary.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import type { CrawlSummary } from '../queue-server/crawl/crawl-stats.js';
import { addCrawlOptions, crawlArgsFrom, type CrawlOptionValues } from './crawl-options.js';
import { eachLine, exited, spawnPetrel } from './children.js';
import { FetcherChildren } from './fetcher-children.js';
import { addFetcherOptions, fetcherArgs, type LocalFetcherValues } from './fetcher-options.js';
import { fail, integerOption } from './options.js';
import { loadOrCreateToken } from '../queue-server/auth/tokens.js';
import { dataPath, ensureDataDir } from '../queue-server/storage/data-dir.js';
import { createServer } from 'node:net';
import { followProgress } from './progress.js';

interface CrawlValues extends CrawlOptionValues, LocalFetcherValues {
  data: string;
  fetchers: number;
  summaryJson?: string;
  progress: boolean;
}

/** A fetcher that fails is started again at most this many times. */
const FETCHER_RESTARTS = 3;

export function crawlCommand(): Command {
  const command = new Command('crawl')
    .description('crawl from the given seeds with a local queue server and N fetcher processes, then print a summary')
    .option('--data <dir>', 'data directory for this crawl', './petrel-data')
    .option('--fetchers <n>', 'fetcher processes to start', integerOption('--fetchers', 1, 64), 2)
    .option('--summary-json <file>', 'also write the summary JSON to this file')
    .option('--no-progress', 'do not show live progress on stderr');
  addFetcherOptions(command, 'local');
  addCrawlOptions(command);
  command.addHelpText(
    'after',
    '\nExample:\n  petrel crawl --seed https://example.org/docs/index.html --scope prefix --fetchers 2 --summary-json summary.json\n',
  );
  command.action(async (values: CrawlValues) => {
    if (values.seed.length === 0) {
      fail('nothing to crawl: give at least one --seed URL, e.g.\n  petrel crawl --seed https://example.org/ --scope host\n(see petrel crawl --help for every option)', { status: 2, command: 'crawl' });
    }
    const summary = await runCrawl(values);
    const text = JSON.stringify(summary, null, 2);
    process.stdout.write(`${text}\n`);
    if (values.summaryJson !== undefined) writeFileSync(values.summaryJson, `${text}\n`);
  });
  return command;
}

async function runCrawl(values: CrawlValues): Promise<CrawlSummary> {
  // The queue server and the fetchers start at the same time: the token and the listening socket are
  // settled here first. The queue server inherits the socket, so a fetcher that connects before the
  // queue server is ready waits in its backlog instead of failing and backing off.
  ensureDataDir(values.data);
  const tokenFile = dataPath(values.data, 'token');
  loadOrCreateToken(tokenFile);
  const socket = await listeningLoopbackSocket();
  const serverUrl = `http://127.0.0.1:${socket.port}`;
  const where = socket.fd === null ? ['--port', String(socket.port)] : ['--listen-fd', '3'];
  const server = spawnPetrel(['queue-server', '--data', values.data, ...where, '--once', ...crawlArgsFrom(values)], socket.fd === null ? [] : [socket.fd]);
  // The child has its own copy now; this process must never accept on it.
  await socket.close();
  let summary: CrawlSummary | null = null;
  const listening = new Promise<{ url: string; tokenFile: string }>((resolve) => {
    eachLine(server.stdout, (line) => {
      const event = parseEvent(line);
      if (event?.event === 'listening') resolve({ url: String(event.url), tokenFile: String(event.tokenFile) });
      if (event?.event === 'finished' || event?.event === 'stopped') summary = event.summary as CrawlSummary;
    });
  });
  eachLine(server.stderr, (line) => {
    if (!line.startsWith('petrel queue-server listening')) process.stderr.write(`${line}\n`);
  });
  const serverExit = exited(server);
  const fetchers = new FetcherChildren({
    label: 'petrel crawl',
    namePrefix: 'fetcher',
    args: (name) => fetcherArgs(values, { serverUrl, tokenFile, name }),
    restart: { kind: 'limited', restarts: FETCHER_RESTARTS },
    log: (line) => process.stderr.write(`${line}\n`),
  });
  fetchers.start(values.fetchers);
  const started = await Promise.race([listening, serverExit.then(() => null)]);
  if (started === null) {
    await fetchers.stop();
    fail('the queue server did not start (see the message above)');
  }

  const stopProgress = values.progress ? followProgress(started.url, readFileSync(started.tokenFile, 'utf8').trim(), process.stderr) : () => undefined;
  const interrupt = () => {
    process.stderr.write('\npetrel crawl: interrupted, stopping\n');
    server.kill('SIGTERM');
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  const serverStatus = await serverExit;
  stopProgress();
  // Fetchers were told `done`; give them a moment to exit on their own, then make sure they do.
  await fetchers.stop({ waitForExitMs: 5000 });
  if (serverStatus !== 0 || summary === null) fail(`the queue server exited with status ${serverStatus} before the crawl finished`);
  return summary;
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

