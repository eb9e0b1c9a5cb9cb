/**
 * `petrel fetcher`: one fetcher process. Start as many as you like, on any machine that can reach
 * the queue server. The token comes from --token-file or the PETREL_TOKEN environment variable; it
 * signs every request and is never sent. An https:// queue server is verified against --ca if given.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { createLogger, LOG_FORMATS, LOG_LEVELS, logFormatFromEnv, logLevelFromEnv, type LogFormat, type LogLevel } from '../shared/logger.js';
import { parseResolveEntry, userAgentFor, type FetcherSettingValues } from '../fetcher/defaults.js';
import { supervisedSignals } from './children.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { addFetcherOptions } from './fetcher-options.js';
import { heapGrowthOption, limitHeapGrowth } from './heap-growth.js';
import { errnoWords, fail } from './options.js';
import { isWellFormedToken } from '../queue-server/auth/tokens.js';
import { parseRedisTarget, readRedisPassword, type RedisTarget } from '../shared/redis-url.js';

/** How the command fails on bad options or files: status 2, said as `petrel fetcher: ...`. */
const USAGE = { status: EXIT.usage, command: 'fetcher' } as const;

interface FetcherValues extends FetcherSettingValues {
  heapGrowth: number;
  once?: boolean;
  giveUpAfter: number;
  server: string[];
  cluster?: string;
  clusterName: string;
  redisPasswordFile?: string;
  allowInsecureRedis?: boolean;
  redisCluster?: boolean;
  tokenFile?: string;
  ca?: string;
  name?: string;
  userAgent?: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/**
 * Stable event names for the fetcher's messages (fetcher/fetcher.ts writes them for people; the names
 * are given here, by their wording, so that the fetcher's code keeps one log function).
 */
const FETCHER_EVENTS: readonly [RegExp, string][] = [
  [/^giving up/, 'gave-up'],
  [/^still waiting for the queue server|; waiting for it/, 'queue-server-unreachable'],
  [/answers again$/, 'queue-server-back'],
  [/^results for .* refused/, 'results-refused'],
  [/^leases lost/, 'leases-lost'],
  [/^heartbeat failed/, 'heartbeat-failed'],
  [/^stopping/, 'stopping'],
  [/^failed:/, 'failed'],
  [/^crawl finished$/, 'done'],
  [/^stopped$/, 'stopped'],
];

function eventOf(message: string): string {
  return FETCHER_EVENTS.find(([pattern]) => pattern.test(message))?.[1] ?? 'message';
}

function levelOf(message: string): 'info' | 'warn' | 'error' {
  const event = eventOf(message);
  if (event === 'failed' || event === 'gave-up') return 'error';
  return ['queue-server-unreachable', 'results-refused', 'leases-lost', 'heartbeat-failed'].includes(event) ? 'warn' : 'info';
}

export function fetcherCommand(version: string): Command {
  const command = new Command('fetcher')
    .description('run one fetcher: claims schedules from the queue server, downloads, parses, posts results back')
    .option('--server <url>', 'queue server URL, e.g. http://127.0.0.1:7700; repeat it to serve several (they share --concurrency fairly)', (value: string, list: string[]) => [...list, value], [] as string[])
    .option('--cluster <url>', 'serve every queue server of the cluster in this Redis (redis://HOST:PORT or rediss://), found and followed as they come and go; instead of --server')
    .option('--cluster-name <name>', 'name of the cluster in Redis', 'default')
    .option('--redis-password-file <file>', 'file holding the Redis password (or set PETREL_REDIS_PASSWORD)')
    .option('--allow-insecure-redis', 'allow a non-loopback Redis without a password')
    .option('--redis-cluster', 'the --cluster address is one node of a Redis Cluster (sharded); the other nodes are found from it')
    .option('--token-file <file>', 'file holding the fetcher API token (<data>/fetcher.token on the queue server); or set PETREL_TOKEN')
    .option('--ca <file>', 'CA certificate (PEM) to verify an https:// queue server with, e.g. its self-signed certificate (default: the system\'s CAs)')
    .option('--name <name>', 'name shown in the queue server\'s fetcher table (default: <hostname>-<pid>)')
    .option('--user-agent <string>', 'full User-Agent override (default: Petrel/<version> (+<contact>))')
    .addOption(new Option('--log-level <level>', 'log records at this level and above').choices(LOG_LEVELS).default(logLevelFromEnv()))
    .addOption(new Option('--log-format <format>', 'json: one JSON object a line (level, time, role, fetcher, event, msg); human: the lines of a terminal').choices(LOG_FORMATS).default(logFormatFromEnv()));
  addFetcherOptions(command, 'all');
  command.addOption(heapGrowthOption());
  command.addHelpText(
    'after',
    '\nWhile the queue server does not answer, the fetcher says so (then every 30 s) and keeps trying; with --once it\n' +
      'gives up after --give-up-after.\n' +
      exitCodesHelp(['ok', 'failed', 'usage']) +
      '  (0 also when stopped with Ctrl-C or SIGTERM: it finishes the request in flight and delivers the results first.)\n',
  );
  return command.action(async (values: FetcherValues) => {
    limitHeapGrowth(values.heapGrowth);
    // Where to fetch for comes first: with no option at all, that is what is missing, not the token.
    if ((values.server.length === 0) === (values.cluster === undefined)) fail('give --server URL (repeatable) or --cluster redis://HOST:PORT, one of the two', USAGE);
    // Cluster members run until stopped (queue-server refuses --once with --cluster): no one would tell it `done`.
    if (values.cluster !== undefined && values.once === true) fail('--once and --cluster do not go together: the members of a cluster run until stopped, and so do its fetchers; stop them (SIGTERM) when the crawl is over', USAGE);
    const token = readToken(values.tokenFile);
    const servers = values.server.map(checkServerUrl);
    const redisTarget = values.cluster === undefined ? null : readRedisTarget(values);
    const ca = values.ca === undefined ? undefined : readCa(values.ca, servers[0] ?? 'https://cluster');
    const name = (values.name ?? `${hostname()}-${process.pid}`).slice(0, 64);
    const resolve = readResolve(values.resolve);
    const logger = createLogger({ role: 'fetcher', fetcher: name, level: values.logLevel, format: values.logFormat });
    const log = (message: string) => logger[levelOf(message)]({ event: eventOf(message), say: true }, `petrel fetcher ${name}: ${message}`);
    // Loaded here, not at the top: `petrel --help` and the other commands do not pay for undici and cheerio.
    const { Fetcher } = await import('../fetcher/fetcher.js');
    const { TrustedOrigins } = await import('../fetcher/address-guard.js');
    const { DnsCache } = await import('../fetcher/dns-cache.js');
    const { ServerPool } = await import('../fetcher/server-pool.js');
    const { SlotBudget } = await import('../fetcher/slot-budget.js');
    const fetcherId = `${name.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 40)}-${randomBytes(4).toString('hex')}`;
    // One DNS cache for the process: every queue server's claim loop resolves the same web.
    const dns = new DnsCache();
    // One --concurrency for the process: the claim loops of all its queue servers share it (slot-budget.ts).
    const budget = new SlotBudget(values.concurrency);
    const makeFetcher = (serverUrl: string) => new Fetcher({
      serverUrl,
      token,
      ca,
      name,
      fetcherId,
      concurrency: values.concurrency,
      budget,
      claimWaitMs: values.claimWaitMs,
      addressPolicy: { allowAll: values.allowPrivateAddresses, trustedOrigins: new TrustedOrigins(), resolve, dns },
      giveUpAfterMs: values.once === true ? values.giveUpAfter : null,
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
    let redis: import('../queue-server/cluster/redis-connection.js').RedisClient | null = null;
    /** Redis refused the password: the fetcher stops (delivering what it holds) and exits 1. */
    let refusedBy: string | null = null;
    let discover: (() => Promise<string[]>) | undefined;
    let events: import('../queue-server/cluster/cluster-events.js').ClusterEvents | null = null;
    let listen: ((pool: { lookUpNow(): void }) => void) | null = null;
    if (redisTarget !== null) {
      const { connectRedis } = await import('../queue-server/cluster/redis-connection.js');
      const { ClusterDirectory } = await import('../fetcher/cluster-directory.js');
      const { ClusterEvents } = await import('../queue-server/cluster/cluster-events.js');
      const { clusterKeys } = await import('../shared/cluster-keys.js');
      const connection = connectRedis(redisTarget, { name: 'petrel-fetcher', onError: (message) => logger.warn({ event: 'redis-error' }, message) });
      redis = connection;
      const directory = new ClusterDirectory(connection, values.clusterName);
      discover = () => directory.servers();
      // A member joining or leaving says so: look the servers up at once (the poll is the fallback).
      listen = (pool) => (events = ClusterEvents.listen(connection, clusterKeys(values.clusterName), (event) => event === 'member' && pool.lookUpNow()));
    }
    const pool = new ServerPool({ servers, discover, makeFetcher, log });
    if (redis !== null) {
      // A wrong or missing password does not get better by retrying: the fetcher stops, as the queue
      // server does (ioredis says it again at every reconnect, so one said before this is heard again).
      const { passwordRefusal } = await import('../queue-server/cluster/cluster-member.js');
      const target = redisTarget!;
      redis.on('error', (error: Error) => {
        const why = passwordRefusal(error, target);
        if (why === null || refusedBy !== null) return;
        refusedBy = why;
        log(`failed: ${why}`);
        pool.stop();
      });
    }
    listen?.(pool);
    logger.info({ event: 'fetcher-started', servers: servers.map((server) => new URL(server).origin), cluster: redisTarget?.display ?? null, concurrency: values.concurrency }, 'started');
    let signals = 0;
    const supervised = process.env.PETREL_SUPERVISED === '1';
    const onSignal = () => {
      signals++;
      if (signals === 1) {
        // Under petrel crawl or start, the supervisor speaks for its fetchers.
        if (!supervised) log('stopping: finishing the requests in flight and delivering their results (signal again to abandon them)');
        pool.stop();
      } else pool.abort();
    };
    supervisedSignals({ onInterrupt: onSignal, onTerminate: onSignal });
    let reason;
    try {
      reason = await pool.run();
    } catch (error) {
      log(`failed: ${(error as Error).message}`);
      process.exit(EXIT.failed);
    }
    (events as { close(): void } | null)?.close();
    redis?.disconnect();
    if (reason === 'gave-up' || refusedBy !== null) process.exit(EXIT.failed);
    if (!supervised) log(reason === 'done' ? 'crawl finished' : 'stopped');
    process.exit(EXIT.ok);
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
      fail(`cannot read token file ${tokenFile} (${errnoWords(error)}): the queue server writes it as <data>/fetcher.token`, USAGE);
    }
  } else token = process.env.PETREL_TOKEN?.trim();
  if (token === undefined || token === '') fail('no token: pass --token-file FILE (the queue server\'s <data>/fetcher.token) or set PETREL_TOKEN', USAGE);
  // The queue server's own rule: any other token could only be refused, after a wait.
  if (!isWellFormedToken(token)) {
    fail(`the token (${tokenFile === undefined ? 'PETREL_TOKEN' : `--token-file ${tokenFile}`}) must be one line of 16-512 printable characters: the queue server's <data>/fetcher.token holds it`, USAGE);
  }
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

function readRedisTarget(values: FetcherValues): RedisTarget {
  let password: string | null;
  try {
    password = readRedisPassword(values.redisPasswordFile);
  } catch (error) {
    fail(`cannot read --redis-password-file: ${(error as Error).message}`, USAGE);
  }
  const target = parseRedisTarget(values.cluster!, { password, allowInsecure: values.allowInsecureRedis === true, sharded: values.redisCluster === true });
  if (!target.ok) fail(target.error, USAGE);
  return target.target;
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

