/**
 * `petrel start`: the queue server as a daemon with N fetcher processes on this machine, and the
 * admin page at /admin to watch and steer the crawl. Fetchers elsewhere join with `petrel fetcher`.
 * With --seed the crawl starts at once; without, start one from the admin page. Runs until Ctrl-C.
 *
 * Output: one JSON line on stdout for programs (`{"event":"started",...}`, and `{"event":"stopped",
 * ...}` at the end, as `petrel queue-server` does); the admin URL and where the token is, for people,
 * on stderr.
 */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { addCrawlOptions, crawlConfigFrom, type CrawlOptionValues } from './crawl-options.js';
import { FetcherChildren } from './fetcher-children.js';
import { addFetcherOptions, fetcherArgs, type LocalFetcherValues } from './fetcher-options.js';
import { fail, integerOption, readTlsFiles } from './options.js';

interface StartValues extends CrawlOptionValues, LocalFetcherValues {
  data: string;
  host: string;
  port: number;
  fetchers: number;
  tlsCert?: string;
  tlsKey?: string;
  ca?: string;
}

export function startCommand(): Command {
  const command = new Command('start')
    .description('run the queue server with N local fetchers and the admin page (/admin); runs until stopped')
    .option('--data <dir>', 'data directory (created if missing; holds admin.token, fetcher.token and the crawl)', './petrel-data')
    .option('--fetchers <n>', 'fetcher processes to start on this machine (0: only fetchers you start elsewhere)', integerOption('--fetchers', 0, 64), 2)
    .option('--host <address>', 'address to listen on (the admin page and the fetcher API)', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', integerOption('--port', 0, 65535), 7700)
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)')
    .option('--ca <file>', 'with --tls-cert: the CA certificate local fetchers verify the queue server with (default: --tls-cert itself, for a self-signed one)');
  addFetcherOptions(command, 'local');
  addCrawlOptions(command);
  command.addHelpText(
    'after',
    '\nExamples:\n  petrel start                                   then open the admin page it prints and start a crawl there\n' +
      '  petrel start --seed https://example.org/ --scope host --fetchers 4\n',
  );
  command.action(async (values: StartValues) => {
    // Loaded here, not at the top, so that other commands do not pay for express and the storage stack.
    const { startQueueServer } = await import('../queue-server/daemon.js');
    const tls = readTlsFiles(values);
    if (values.ca !== undefined && tls === undefined) fail('--ca is for local fetchers of an HTTPS queue server: give --tls-cert and --tls-key too', { status: 2 });
    let server;
    try {
      server = await startQueueServer({ dataDir: values.data, host: values.host, port: values.port, tls, crawl: crawlConfigFrom(values, false) });
    } catch (error) {
      fail((error as Error).message);
    }
    const running = server;
    const adminUrl = `${running.url}/admin`;
    const adminTokenFile = resolve(running.adminTokenFile);
    const tokenFile = resolve(running.tokenFile);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    // Over TLS, local fetchers verify the certificate (the CA, or the self-signed certificate itself)
    // and reach a wildcard listener over loopback, the address a test certificate names.
    const ca = tls === undefined ? undefined : resolve(values.ca ?? values.tlsCert!);
    const fetcherUrl = tls === undefined ? running.url : running.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
    const fetchers = new FetcherChildren({
      label: 'petrel start',
      namePrefix: 'local',
      args: (name) => fetcherArgs(values, { serverUrl: fetcherUrl, tokenFile, name, ca }),
      restart: { kind: 'backoff', firstDelayMs: 1000, maxDelayMs: 30_000, healthyRunMs: 60_000 },
      log,
    });
    fetchers.start(values.fetchers);

    process.stdout.write(`${JSON.stringify({ event: 'started', url: running.url, adminUrl, adminTokenFile, tokenFile, fetchers: values.fetchers, pid: process.pid })}\n`);
    log(`petrel start: queue server on ${running.url} with ${values.fetchers} local fetcher${values.fetchers === 1 ? '' : 's'}`);
    log(`  admin page:     ${adminUrl}`);
    log(`  admin token:    ${adminTokenFile}  (paste its content into the login form)`);
    log(`  more fetchers:  petrel fetcher --server ${running.url} --token-file ${tokenFile}${ca === undefined ? '' : ` --ca ${ca}`}`);
    if (values.seed.length === 0) log('  no --seed given: start a crawl from the admin page');
    log('Ctrl-C stops the queue server and the local fetchers.');

    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      log('petrel start: stopping');
      await fetchers.stop();
      const summary = running.service.summary();
      await running.close();
      process.stdout.write(`${JSON.stringify({ event: 'stopped', summary })}\n`);
      process.exit(0);
    };
    process.on('SIGINT', () => void stop());
    process.on('SIGTERM', () => void stop());
  });
  return command;
}
