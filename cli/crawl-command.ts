/**
 * `petrel crawl`: a one-shot crawl on this machine. Starts a queue server and N fetcher child
 * processes (the same programs a fleet runs, talking HTTP on loopback), shows progress, and exits 0
 * when the frontier is empty and no schedule is out, printing the summary.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { Command } from 'commander';
import { FETCHER_DEFAULTS } from './fetcher-command.js';
import type { CrawlSummary } from '../queue-server/crawl/crawl-stats.js';
import { addCrawlOptions, crawlArgsFrom, type CrawlOptionValues } from './crawl-options.js';
import { eachLine, exited, spawnPetrel } from './children.js';
import { fail, integerOption } from './options.js';
import { loadOrCreateToken } from '../queue-server/auth/tokens.js';
import { dataPath, ensureDataDir } from '../queue-server/storage/data-dir.js';
import { createServer } from 'node:net';
import { followProgress } from './progress.js';

interface CrawlValues extends CrawlOptionValues {
  data: string;
  fetchers: number;
  concurrency: number;
  summaryJson?: string;
  contact?: string;
  maxBodyBytes: number;
  timeoutMs: number;
  progress: boolean;
}

const FETCHER_RESTARTS = 3;

export function crawlCommand(): Command {
  const command = new Command('crawl')
    .description('crawl from the given seeds with a local queue server and N fetcher processes, then print a summary')
    .option('--data <dir>', 'data directory for this crawl', './petrel-data')
    .option('--fetchers <n>', 'fetcher processes to start', integerOption('--fetchers', 1, 64), 2)
    .option('--concurrency <n>', 'hosts each fetcher fetches at once', integerOption('--concurrency', 1, 1024), FETCHER_DEFAULTS.concurrency)
    .option('--summary-json <file>', 'also write the summary JSON to this file')
    .option('--contact <url-or-email>', 'contact put in the User-Agent so site owners can reach you')
    .option('--max-body-bytes <n>', 'body bytes kept per page; longer pages are cut and marked truncated', integerOption('--max-body-bytes', 1024), FETCHER_DEFAULTS.maxBodyBytes)
    .option('--timeout-ms <ms>', 'total time one request may take', integerOption('--timeout-ms', 100), FETCHER_DEFAULTS.timeoutMs)
    .option('--no-progress', 'do not show live progress on stderr');
  addCrawlOptions(command);
  command.addHelpText(
    'after',
    '\nExample:\n  petrel crawl --seed https://example.org/docs/index.html --scope prefix --fetchers 2 --summary-json summary.json\n',
  );
  command.action(async (values: CrawlValues) => {
    if (values.seed.length === 0) {
      process.stderr.write('petrel crawl: nothing to crawl: give at least one --seed URL, e.g.\n  petrel crawl --seed https://example.org/ --scope host\n(see petrel crawl --help for every option)\n');
      process.exit(2);
    }
    const summary = await runCrawl(values);
    const text = JSON.stringify(summary, null, 2);
    process.stdout.write(`${text}\n`);
    if (values.summaryJson !== undefined) writeFileSync(values.summaryJson, `${text}\n`);
  });
  return command;
}

async function runCrawl(values: CrawlValues): Promise<CrawlSummary> {
  // The queue server and the fetchers start at the same time: the token and the port are settled
  // here first, and fetchers that ask before the queue server listens simply retry.
  ensureDataDir(values.data);
  const tokenFile = dataPath(values.data, 'token');
  loadOrCreateToken(tokenFile);
  const port = await freeLoopbackPort();
  const serverUrl = `http://127.0.0.1:${port}`;
  const server = spawnPetrel(['queue-server', '--data', values.data, '--port', String(port), '--once', ...crawlArgsFrom(values)]);
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
  const fetchers: ChildProcess[] = [];
  let serverDone = false;
  const startFetcher = (index: number, restartsLeft: number) => {
    const name = `fetcher-${index + 1}`;
    const child = spawnPetrel(fetcherArgs(values, serverUrl, tokenFile, name));
    fetchers[index] = child;
    eachLine(child.stderr, (line) => process.stderr.write(`${line}\n`));
    child.once('exit', (code, signal) => {
      if (serverDone || code === 0) return;
      process.stderr.write(`petrel crawl: ${name} exited (${signal ?? `status ${code}`})${restartsLeft > 0 ? '; restarting it' : ''}\n`);
      if (restartsLeft > 0) startFetcher(index, restartsLeft - 1);
    });
  };
  for (let i = 0; i < values.fetchers; i++) startFetcher(i, FETCHER_RESTARTS);
  const started = await Promise.race([listening, serverExit.then(() => null)]);
  if (started === null) {
    for (const child of fetchers) child.kill('SIGTERM');
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
  serverDone = true;
  stopProgress();
  // Fetchers were told `done`; give them a moment to exit on their own, then make sure they do.
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(fetchers.map(exited)), new Promise((resolve) => (grace = setTimeout(resolve, 5000)))]);
  clearTimeout(grace);
  for (const child of fetchers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.all(fetchers.map(exited));
  if (serverStatus !== 0 || summary === null) fail(`the queue server exited with status ${serverStatus} before the crawl finished`);
  return summary;
}

function fetcherArgs(values: CrawlValues, serverUrl: string, tokenFile: string, name: string): string[] {
  const args = ['fetcher', '--server', serverUrl, '--token-file', tokenFile, '--name', name];
  args.push('--concurrency', String(values.concurrency), '--max-body-bytes', String(values.maxBodyBytes), '--timeout-ms', String(values.timeoutMs));
  if (values.contact !== undefined) args.push('--contact', values.contact);
  return args;
}

function parseEvent(line: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A port nobody listens on now, on 127.0.0.1. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

