/**
 * `petrel fetcher`: one fetcher process. Start as many as you like, on any machine that can reach
 * the queue server. The token comes from --token-file or the PETREL_TOKEN environment variable; it
 * signs every request and is never sent. An https:// queue server is verified against --ca if given.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Command } from 'commander';
import { parseResolveEntry, userAgentFor, type FetcherSettingValues } from '../fetcher/defaults.js';
import { addFetcherOptions } from './fetcher-options.js';
import { fail } from './options.js';

/** How the command fails on bad options or files: status 2, said as `petrel fetcher: ...`. */
const USAGE = { status: 2, command: 'fetcher' } as const;

interface FetcherValues extends FetcherSettingValues {
  server: string;
  tokenFile?: string;
  ca?: string;
  name?: string;
  userAgent?: string;
}

export function fetcherCommand(version: string): Command {
  const command = new Command('fetcher')
    .description('run one fetcher: claims schedules from the queue server, downloads, parses, posts results back')
    .requiredOption('--server <url>', 'queue server URL, e.g. http://127.0.0.1:7700')
    .option('--token-file <file>', 'file holding the fetcher API token (<data>/fetcher.token on the queue server); or set PETREL_TOKEN')
    .option('--ca <file>', 'CA certificate (PEM) to verify an https:// queue server with, e.g. its self-signed certificate (default: the system\'s CAs)')
    .option('--name <name>', 'name shown in the queue server\'s fetcher table (default: <hostname>-<pid>)')
    .option('--user-agent <string>', 'full User-Agent override (default: Petrel/<version> (+<contact>))');
  addFetcherOptions(command, 'all');
  return command.action(async (values: FetcherValues) => {
    const token = readToken(values.tokenFile);
    const serverUrl = checkServerUrl(values.server);
    const ca = readCa(values.ca, serverUrl);
    const name = (values.name ?? `${hostname()}-${process.pid}`).slice(0, 64);
    const resolve = readResolve(values.resolve);
    const log = (message: string) => process.stderr.write(`petrel fetcher ${name}: ${message}\n`);
    // Loaded here, not at the top: `petrel --help` and the other commands do not pay for undici and cheerio.
    const { Fetcher } = await import('../fetcher/fetcher.js');
    const { TrustedHosts } = await import('../fetcher/address-guard.js');
    const fetcher = new Fetcher({
      serverUrl,
      token,
      ca,
      name,
      fetcherId: `${name.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 40)}-${randomBytes(4).toString('hex')}`,
      concurrency: values.concurrency,
      claimWaitMs: values.claimWaitMs,
      addressPolicy: { allowAll: values.allowPrivateAddresses, trustedHosts: new TrustedHosts(), resolve },
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

function readResolve(entries: readonly string[]): Map<string, string> {
  const resolve = new Map<string, string>();
  for (const entry of entries) {
    const parsed = parseResolveEntry(entry);
    if ('error' in parsed) fail(parsed.error, USAGE);
    resolve.set(parsed.host, parsed.address);
  }
  return resolve;
}

function readToken(tokenFile: string | undefined): string {
  let token: string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (error) {
      fail(`cannot read token file ${tokenFile}: ${(error as Error).message}`, USAGE);
    }
  } else token = process.env.PETREL_TOKEN?.trim();
  if (token === undefined || token === '') fail('no token: pass --token-file FILE (the queue server\'s <data>/fetcher.token) or set PETREL_TOKEN', USAGE);
  return token;
}

function readCa(file: string | undefined, serverUrl: string): Buffer | undefined {
  if (file === undefined) return undefined;
  if (new URL(serverUrl).protocol !== 'https:') fail(`--ca verifies an https:// queue server; --server is ${serverUrl}`, USAGE);
  try {
    return readFileSync(file);
  } catch (error) {
    fail(`cannot read --ca ${file}: ${(error as Error).message}`, USAGE);
  }
}

function checkServerUrl(server: string): string {
  try {
    const url = new URL(server);
    if (url.protocol === 'http:' || url.protocol === 'https:') return server;
  } catch {
    // fall through
  }
  fail(`--server must be an http(s) URL, got "${server}"`, USAGE);
}

