/**
 * `petrel fetcher`: one fetcher process. Start as many as you like, on any machine that can reach
 * the queue server. The token comes from --token-file or the PETREL_TOKEN environment variable; it
 * signs every request and is never sent. An https:// queue server is verified against --ca if given.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { hostname } from 'node:os';

export const FETCHER_DEFAULTS = {
  concurrency: 16,
  maxBodyBytes: 2 * 1024 * 1024,
  timeoutMs: 30_000,
  connectTimeoutMs: 10_000,
  claimWaitMs: 20_000,
} as const;

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || number < min || number > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}, got "${value}"`);
    }
    return number;
  };
}

interface FetcherValues {
  server: string;
  tokenFile?: string;
  ca?: string;
  concurrency: number;
  name?: string;
  userAgent?: string;
  contact?: string;
  maxBodyBytes: number;
  timeoutMs: number;
  connectTimeoutMs: number;
  claimWaitMs: number;
}

export function userAgentFor(version: string, contact: string | undefined): string {
  return contact === undefined || contact === '' ? `Petrel/${version} (web crawler)` : `Petrel/${version} (+${contact})`;
}

export function fetcherCommand(version: string): Command {
  return new Command('fetcher')
    .description('run one fetcher: claims schedules from the queue server, downloads, parses, posts results back')
    .requiredOption('--server <url>', 'queue server URL, e.g. http://127.0.0.1:7700')
    .option('--token-file <file>', 'file holding the fetcher API token (<data>/fetcher.token on the queue server); or set PETREL_TOKEN')
    .option('--ca <file>', 'CA certificate (PEM) to verify an https:// queue server with, e.g. its self-signed certificate (default: the system\'s CAs)')
    .option('--concurrency <n>', 'hosts fetched at once by this process', integer('--concurrency', 1, 1024), FETCHER_DEFAULTS.concurrency)
    .option('--name <name>', 'name shown in the queue server\'s fetcher table (default: <hostname>-<pid>)')
    .option('--contact <url-or-email>', 'contact put in the User-Agent so site owners can reach you, e.g. https://example.org/crawler')
    .option('--user-agent <string>', 'full User-Agent override (default: Petrel/<version> (+<contact>))')
    .option('--max-body-bytes <n>', 'body bytes kept per page after decompression; longer pages are cut and marked truncated', integer('--max-body-bytes', 1024), FETCHER_DEFAULTS.maxBodyBytes)
    .option('--timeout-ms <ms>', 'total time one request may take, connect to last byte', integer('--timeout-ms', 100), FETCHER_DEFAULTS.timeoutMs)
    .option('--connect-timeout-ms <ms>', 'time to establish a connection', integer('--connect-timeout-ms', 100), FETCHER_DEFAULTS.connectTimeoutMs)
    .option('--claim-wait-ms <ms>', 'how long one claim may wait at the queue server for work (long poll)', integer('--claim-wait-ms', 0, 60_000), FETCHER_DEFAULTS.claimWaitMs)
    .action(async (values: FetcherValues) => {
      const token = readToken(values.tokenFile);
      const serverUrl = checkServerUrl(values.server);
      const ca = readCa(values.ca, serverUrl);
      const name = (values.name ?? `${hostname()}-${process.pid}`).slice(0, 64);
      const log = (message: string) => process.stderr.write(`petrel fetcher ${name}: ${message}\n`);
      // Loaded here, not at the top: `petrel --help` and the other commands do not pay for undici and cheerio.
      const { Fetcher } = await import('../fetcher/fetcher.js');
      const fetcher = new Fetcher({
        serverUrl,
        token,
        ca,
        name,
        fetcherId: `${name.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 40)}-${randomBytes(4).toString('hex')}`,
        concurrency: values.concurrency,
        claimWaitMs: values.claimWaitMs,
        log,
        download: {
          userAgent: values.userAgent ?? userAgentFor(version, values.contact),
          maxBodyBytes: values.maxBodyBytes,
          connectTimeoutMs: values.connectTimeoutMs,
          headersTimeoutMs: values.timeoutMs,
          bodyTimeoutMs: values.timeoutMs,
          totalTimeoutMs: values.timeoutMs,
        },
      });
      let signals = 0;
      const onSignal = () => {
        signals++;
        if (signals === 1) {
          log('stopping: finishing held slots (signal again to abandon them)');
          fetcher.stop();
        } else fetcher.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const reason = await fetcher.run();
        log(reason === 'done' ? 'crawl finished' : 'stopped');
      } catch (error) {
        log(`failed: ${(error as Error).message}`);
        process.exit(1);
      }
      process.exit(0);
    });
}

function readToken(tokenFile: string | undefined): string {
  let token: string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (error) {
      exitWith(`cannot read token file ${tokenFile}: ${(error as Error).message}`);
    }
  } else token = process.env.PETREL_TOKEN?.trim();
  if (token === undefined || token === '') exitWith('no token: pass --token-file FILE (the queue server\'s <data>/fetcher.token) or set PETREL_TOKEN');
  return token;
}

function readCa(file: string | undefined, serverUrl: string): Buffer | undefined {
  if (file === undefined) return undefined;
  if (new URL(serverUrl).protocol !== 'https:') exitWith(`--ca verifies an https:// queue server; --server is ${serverUrl}`);
  try {
    return readFileSync(file);
  } catch (error) {
    exitWith(`cannot read --ca ${file}: ${(error as Error).message}`);
  }
}

function checkServerUrl(server: string): string {
  try {
    const url = new URL(server);
    if (url.protocol === 'http:' || url.protocol === 'https:') return server;
  } catch {
    // fall through
  }
  exitWith(`--server must be an http(s) URL, got "${server}"`);
}

function exitWith(message: string): never {
  process.stderr.write(`petrel fetcher: ${message}\n`);
  process.exit(2);
}
