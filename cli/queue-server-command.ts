/**
 * `petrel queue-server`: runs the daemon. Events for programs go to stdout as JSON lines
 * (`listening`, `finished`); messages for people go to stderr.
 */
import { Command } from 'commander';
import { CRAWL_SETTINGS } from '../queue-server/crawl-config.js';
import { addCrawlOptions, crawlConfigFrom, type CrawlOptionValues } from './crawl-options.js';
import { fail, integerOption, readTlsFiles } from './options.js';

interface QueueServerValues extends CrawlOptionValues {
  data: string;
  host: string;
  port: number;
  tokenFile?: string;
  tlsCert?: string;
  tlsKey?: string;
  once: boolean;
  listenFd?: number;
}

export function queueServerCommand(): Command {
  const command = new Command('queue-server')
    .description('run the queue server: frontier, schedules, robots.txt, results; fetchers connect to it over HTTP')
    .requiredOption('--data <dir>', 'data directory (created if missing; holds fetcher.token and the page archive)')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', integerOption('--port', 0, 65535), 7700)
    .option('--token-file <file>', 'fetcher API token to use (default: <data>/fetcher.token, created on first start)')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key); fetchers then need --ca unless a public CA signed it')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)')
    .option('--once', CRAWL_SETTINGS.once.help, CRAWL_SETTINGS.once.default)
    .option('--listen-fd <n>', 'accept connections on this inherited file descriptor, a socket already listening, instead of --host and --port (petrel crawl passes one, so its fetchers can connect before the queue server is ready)', integerOption('--listen-fd', 3, 1023));
  addCrawlOptions(command);
  command.action(async (values: QueueServerValues) => {
    // Loaded here, not at the top, so that other commands do not pay for express and the storage stack.
    const { startQueueServer } = await import('../queue-server/daemon.js');
    const tls = readTlsFiles(values);
    let server;
    try {
      server = await startQueueServer({
        dataDir: values.data,
        host: values.host,
        port: values.port,
        listenFd: values.listenFd,
        tokenFile: values.tokenFile,
        tls,
        crawl: crawlConfigFrom(values, values.once),
      });
    } catch (error) {
      fail((error as Error).message);
    }
    const running = server;
    process.stdout.write(`${JSON.stringify({ event: 'listening', url: running.url, tokenFile: running.tokenFile, adminTokenFile: running.adminTokenFile, pid: process.pid })}\n`);
    process.stderr.write(`petrel queue-server listening on ${running.url} (fetcher token in ${running.tokenFile})\n`);
    let stopping = false;
    const stop = async (reason: string) => {
      if (stopping) return;
      stopping = true;
      const status = running.service.status();
      const summary = running.service.summary();
      const fetchers = status.fetchers.map(({ name, address, resultsApplied, pagesFetched }) => ({ name, address, resultsApplied, pagesFetched }));
      await running.close();
      process.stdout.write(`${JSON.stringify({ event: reason, summary, fetchers })}\n`);
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('stopped'));
    process.on('SIGTERM', () => void stop('stopped'));
    if (values.once) {
      await running.finished;
      // Let every fetcher hear `done` before the port closes (at most 1.5 s for one that stays silent).
      await running.service.allFetchersTold(1500);
      void stop('finished');
    }
  });
  return command;
}
