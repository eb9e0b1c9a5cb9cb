/**
 * `petrel queue-server`: runs the daemon. Events for programs go to stdout as JSON lines
 * (`listening`, `finished`, `stopped`, and `crawl-over` from a supervised one-shot crawl: see
 * children.ts); messages for people go to stderr.
 *
 * The crawl's settings are those saved in the data directory by the last run (crawl.json), with the
 * options given here on top; they are checked before anything is created or started.
 */
import { existsSync, rmSync } from 'node:fs';
import { Command, Option } from 'commander';
import { createLogger, LOG_FORMATS, LOG_LEVELS, logFormatFromEnv, logLevelFromEnv, type LogFormat, type LogLevel } from '../shared/logger.js';
import { CRAWL_SETTINGS } from '../queue-server/crawl-config.js';
import { readSavedCrawl } from '../queue-server/crawl/saved-settings.js';
import { dataPath } from '../queue-server/storage/data-dir.js';
import { addCrawlOptions, crawlSettingsFor, explicitCrawlSettings } from './crawl-options.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { checkTokenFileOption, checkWritableDataDir, DATA_OPTION, exitOnDamagedData, fail, startFailure, integerOption, readTlsFiles } from './options.js';
import { isSupervised, supervisedSignals, whenSupervisorGone } from './children.js';
import { heapGrowthOption, limitHeapGrowth } from './heap-growth.js';
import { applyDaemonOptions, readConfigFile, type ConfigFile } from './config-file.js';
import { parseRedisTarget, readRedisPassword } from '../shared/redis-url.js';
import { MAX_PARTITIONS } from '../queue-server/cluster/partition.js';
import type { ClusterOptions } from '../queue-server/cluster/cluster-member.js';

interface QueueServerValues {
  heapGrowth: number;
  data: string;
  host: string;
  port: number;
  tokenFile?: string;
  tlsCert?: string;
  tlsKey?: string;
  once: boolean;
  listenFd?: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  publicSearch?: boolean;
  cluster?: string;
  clusterName: string;
  clusterUrl?: string;
  partitions?: number;
  partition?: number;
  redisPasswordFile?: string;
  allowInsecureRedis?: boolean;
  redisCluster?: boolean;
  clusterBloom: boolean;
}

/**
 * How long a supervised one-shot queue server waits for its supervisor's SIGTERM after the crawl is over,
 * ms: `petrel crawl` sends it within seconds (fetchers.stop's wait and grace, and progress catching up).
 * A supervisor that is gone (killed) is not waited for: its end of stdin closes (children.ts).
 */
const SUPERVISOR_GONE_MS = 60_000;

export function queueServerCommand(): Command {
  const command = addQueueServerOptions(new Command('queue-server').description('run the queue server: frontier, schedules, robots.txt, results; fetchers connect to it over HTTP'));
  command.addHelpText(
    'after',
    `\nSettings not given here come from --config FILE, then from what the last run on the data directory saved in <data>/crawl.json.\n` +
      `petrel config print [the same options] shows the effective settings and where each came from.\n${exitCodesHelp(['ok', 'failed', 'usage', 'interrupted'])}`,
  );
  command.action(async () => {
    const name = 'queue-server';
    const file = configFileOf(command, name);
    const values = command.opts() as QueueServerValues;
    limitHeapGrowth(values.heapGrowth);
    const once = values.once === true;
    checkWritableDataDir(values.data, name);
    checkTokenFileOption(values.tokenFile, name);
    const saved = loadSaved(values.data, name);
    const config = crawlSettingsFor(command, once, saved?.settings ?? null, name, file?.crawl ?? null);
    const tls = readTlsFiles(values);
    const cluster = clusterOf(values, once, name);
    const logger = createLogger({ role: 'queue-server', level: values.logLevel, format: values.logFormat });
    // Loaded here, not at the top, so that other commands do not pay for express and the storage stack.
    const { startQueueServer } = await import('../queue-server/daemon.js');
    const created = !existsSync(values.data);
    let server;
    try {
      server = await startQueueServer({
        dataDir: values.data,
        host: values.host,
        port: values.port,
        listenFd: values.listenFd,
        tokenFile: values.tokenFile,
        tls,
        publicSearch: values.publicSearch === true,
        cluster,
        // Another member may own the partition now: stop at once (the last commit still runs) rather than crawl its hosts twice.
        onClusterLost: () => process.kill(process.pid, 'SIGTERM'),
        onDamagedData: exitOnDamagedData(name, (line) => logger.error({ event: 'data-damaged', say: true }, line)),
        crawl: config,
        logger,
        // Seeds of a config file do not restart a stopped crawl (config-file.ts says why); --seed does.
        stopped: !once && saved?.stopped === true && explicitCrawlSettings(command).seeds === undefined,
      });
    } catch (error) {
      // Refused at start: a directory this run created is not left behind.
      if (created) rmSync(values.data, { recursive: true, force: true });
      fail(startFailure(error, values.data), { command: name });
    }
    const running = server;
    const start = { loaded: running.loaded, pass: running.pass };
    let stopping = false;
    /** A supervised one-shot crawl that is over, waiting for its supervisor's SIGTERM. */
    let over = false;
    const stop = async (reason: 'stopped' | 'finished', status: number) => {
      if (stopping) return;
      stopping = true;
      const now = running.service.status();
      const summary = running.service.summary();
      const fetchers = now.fetchers.map(({ name: fetcher, address, resultsApplied, pagesFetched }) => ({ name: fetcher, address, resultsApplied, pagesFetched }));
      await running.close();
      // Said on a terminal too (an operator stopping a daemon sees it went), unless a supervisor speaks for it.
      const said = `petrel queue-server: ${reason === 'finished' ? 'crawl finished' : 'stopped'}: ${summary.pagesFetched} pages fetched this run, ${summary.errors} errors; the crawl is saved in ${values.data}`;
      logger.info({ event: reason, say: !isSupervised(), pagesFetched: summary.pagesFetched, errors: summary.errors, status }, said);
      process.stdout.write(`${JSON.stringify({ event: reason, summary, fetchers })}\n`);
      process.exit(status);
    };
    // A one-shot crawl stopped before its end was interrupted; a daemon stopped is a daemon done.
    const stopped = () => void (over ? stop('finished', EXIT.ok) : stop('stopped', once ? EXIT.interrupted : EXIT.ok));
    supervisedSignals({ onInterrupt: stopped, onTerminate: stopped });
    // Announced only now that SIGTERM has its handler: a supervisor that stops the queue server as soon as
    // it hears `listening` must get a drain, not the default action of the signal (killed at once).
    process.stdout.write(`${JSON.stringify({ event: 'listening', url: running.url, tokenFile: running.tokenFile, adminTokenFile: running.adminTokenFile, metricsTokenFile: running.metricsTokenFile, pid: process.pid, ...start })}\n`);
    logger.info({ event: 'listening', say: true, url: running.url, config: file?.path ?? null }, `petrel queue-server listening on ${running.url} (fetcher token in ${running.tokenFile})`);
    // A supervisor gone (its stdin pipe closed: killed, say) sends no SIGTERM: a crawl that is over ends
    // as an unsupervised one does, and one that is not yet over does when it is.
    let supervisorGone = false;
    whenSupervisorGone(() => {
      supervisorGone = true;
      logger.warn({ event: 'supervisor-gone' }, 'the process that started this queue server is gone');
      if (over) void running.service.allFetchersTold(1500).then(() => stop('finished', EXIT.ok));
    });
    if (once) {
      await running.finished;
      if (isSupervised()) {
        // The supervisor knows the fetchers it started, also those that have not asked yet: it stops
        // them, then this process (children.ts). The timer guards against a supervisor that is there
        // and never sends it; one that is gone is heard at once (whenSupervisorGone, above).
        over = true;
        if (!supervisorGone) {
          process.stdout.write(`${JSON.stringify({ event: 'crawl-over' })}\n`);
          setTimeout(() => void stop('finished', EXIT.ok), SUPERVISOR_GONE_MS).unref();
          return;
        }
      }
      // Let every fetcher hear `done` before the port closes (at most 1.5 s for one that stays silent).
      await running.service.allFetchersTold(1500);
      void stop('finished', EXIT.ok);
    }
  });
  return command;
}

/** The --config file of a command, read and checked, its daemon options applied; a usage error when it is bad. */
export function configFileOf(command: Command, name: string): ConfigFile | null {
  const path = command.getOptionValue('config') as string | undefined;
  if (path === undefined) return null;
  let file: ConfigFile;
  try {
    file = readConfigFile(path);
  } catch (error) {
    fail((error as Error).message, { status: EXIT.usage, command: name });
  }
  applyDaemonOptions(command, file);
  return file;
}

/** The queue server's options (also those of `petrel config print`, which shows what they give). */
export function addQueueServerOptions(command: Command): Command {
  command
    .option(DATA_OPTION.flags, 'data directory (created if missing; holds fetcher.token, the crawl database, the page archive and the crawl\'s settings)', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', integerOption('--port', 0, 65535), 7700)
    .option('--token-file <file>', 'fetcher API token to use (default: <data>/fetcher.token, created on first start)')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key); fetchers then need --ca unless a public CA signed it')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)')
    .option('--once', CRAWL_SETTINGS.once.help)
    .option('--public-search', 'serve /search (a search page) and /api/search without login, each address at most 60 searches a minute; without it they need the admin session or token')
    .option('--listen-fd <n>', 'accept connections on this inherited file descriptor, a socket already listening, instead of --host and --port (petrel crawl passes one, so its fetchers can connect before the queue server is ready)', integerOption('--listen-fd', 3, 1023))
    .addOption(new Option('--log-level <level>', 'log records at this level and above (debug adds the access log of the HTTP API)').choices(LOG_LEVELS).default(logLevelFromEnv()))
    .addOption(new Option('--log-format <format>', 'json: one JSON object a line (level, time, role, event, msg); human: the lines of a terminal').choices(LOG_FORMATS).default(logFormatFromEnv()))
    .option('--cluster <url>', 'join a cluster of queue servers over Redis (redis://HOST:PORT or rediss://); each owns the hosts of one partition, links for other hosts go to their owner (README "Cluster")')
    .option('--partitions <k>', 'partitions of the cluster (the first member fixes K; run K queue servers: a partition without one is not crawled, its links wait in Redis)', integerOption('--partitions', 1, MAX_PARTITIONS))
    .option('--partition <i>', 'take this partition (default: the one this data directory owned, else the first free one)', integerOption('--partition', 0, MAX_PARTITIONS - 1))
    .option('--cluster-name <name>', 'name of the cluster in Redis (several can share one Redis)', 'default')
    .option('--cluster-url <url>', 'URL fetchers reach this queue server at, published in Redis (default: the listening URL)')
    .option('--redis-password-file <file>', 'file holding the Redis password (or set PETREL_REDIS_PASSWORD; never put it in the URL)')
    .option('--allow-insecure-redis', 'allow a non-loopback Redis without a password (only on a network you trust)')
    .option('--redis-cluster', 'the --cluster address is one node of a Redis Cluster (sharded); the other nodes are found from it')
    .option('--no-cluster-bloom', 'do not probe the partitions\' Bloom filters in Redis before forwarding links (more link traffic, no false-positive loss)')
    .option('--config <file>', 'read options from this YAML file: keys are the long options without "--" (delay-ms: 2s, seed: [https://example.org/]); options given on the command line win')
    .addOption(heapGrowthOption());
  addCrawlOptions(command);
  return command;
}

/** The settings the last run saved, or a one-line usage error naming the file when they are broken. */
export function loadSaved(dataDir: string, name: string): ReturnType<typeof readSavedCrawl> {
  try {
    return existsSync(dataDir) ? readSavedCrawl(dataPath(dataDir, 'settings')) : null;
  } catch (error) {
    fail((error as Error).message, { status: EXIT.usage, command: name });
  }
}

/** The --cluster options, checked (a usage error names what is wrong); undefined without --cluster. */
function clusterOf(values: QueueServerValues, once: boolean, name: string): (ClusterOptions & { url?: string }) | undefined {
  const usage = { status: EXIT.usage, command: name };
  if (values.cluster === undefined) {
    for (const option of ['partitions', 'partition', 'clusterUrl', 'redisPasswordFile'] as const) {
      if (values[option] !== undefined) fail(`--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --cluster`, usage);
    }
    return undefined;
  }
  if (once) fail('--once and --cluster do not go together: a cluster member cannot tell on its own that the whole crawl ended; stop the members when it has', usage);
  let password: string | null;
  try {
    password = readRedisPassword(values.redisPasswordFile);
  } catch (error) {
    fail(`cannot read --redis-password-file: ${(error as Error).message}`, usage);
  }
  const target = parseRedisTarget(values.cluster, { password, allowInsecure: values.allowInsecureRedis === true, sharded: values.redisCluster === true });
  if (!target.ok) fail(target.error, usage);
  if (values.clusterUrl !== undefined && !/^https?:\/\//.test(values.clusterUrl)) fail(`--cluster-url must be an http(s) URL, got "${values.clusterUrl.slice(0, 200)}"`, usage);
  return { redis: target.target, name: values.clusterName, partitions: values.partitions ?? null, partition: values.partition ?? null, url: values.clusterUrl, bloom: values.clusterBloom };
}
