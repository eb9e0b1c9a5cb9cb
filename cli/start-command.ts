/**
 * `petrel start`: the queue server as a daemon with N fetcher processes on this machine, and the
 * admin page at /admin to watch and steer the crawl. Fetchers elsewhere join with `petrel fetcher`.
 * With --seed the crawl starts at once; without, start one from the admin page. Runs until Ctrl-C.
 *
 * Output: one JSON line on stdout for programs (`{"event":"started",...}`, and `{"event":"stopped",
 * ...}` at the end, as `petrel queue-server` does); the admin URL and where the token is, for people,
 * on stderr.
 */
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { createLogger, sayer } from '../shared/logger.js';
import { addCrawlOptions, crawlSettingsFor, explicitCrawlSettings, type CrawlOptionValues } from './crawl-options.js';
import { supervisedSignals } from './children.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { FetcherChildren } from './fetcher-children.js';
import { localFetcherSettingsFor, saveLocalFetcherSettings } from './local-fetcher-settings.js';
import { addFetcherOptions, fetcherArgs, type LocalFetcherValues } from './fetcher-options.js';
import { heapGrowthOption, limitHeapGrowth } from './heap-growth.js';
import { checkWritableDataDir, DATA_OPTION, exitOnDamagedData, fail, startFailure, integerOption, readTlsFiles } from './options.js';
import { loadSaved } from './queue-server-command.js';

interface StartValues extends CrawlOptionValues, LocalFetcherValues {
  heapGrowth: number;
  data: string;
  host: string;
  port: number;
  fetchers: number;
  tlsCert?: string;
  tlsKey?: string;
  ca?: string;
  publicSearch?: boolean;
}

export function startCommand(): Command {
  const command = new Command('start')
    .description('run the queue server with N local fetchers and the admin page (/admin); runs until stopped')
    .option(DATA_OPTION.flags, 'data directory (created if missing; holds admin.token, fetcher.token, the crawl and its settings)', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--fetchers <n>', 'fetcher processes to start on this machine (0: only fetchers you start elsewhere)', integerOption('--fetchers', 0, 64), 2)
    .option('--host <address>', 'address to listen on (the admin page and the fetcher API)', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', integerOption('--port', 0, 65535), 7700)
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)')
    .option('--public-search', 'serve /search (a search page) and /api/search without login, each address at most 60 searches a minute; without it they need the admin session or token')
    .option('--ca <file>', 'with --tls-cert: the CA certificate local fetchers verify the queue server with (default: --tls-cert itself, for a self-signed one)')
    .addOption(heapGrowthOption());
  addFetcherOptions(command, 'local');
  addCrawlOptions(command);
  command.addHelpText(
    'after',
    '\nExamples:\n  petrel start                                   then open the admin page it prints and start a crawl there\n' +
      '  petrel start --seed https://example.org/ --scope host --fetchers 4\n' +
      '\nRun again on the same --data, it goes on with the crawl it had (its settings are kept in <data>/crawl.json;\n' +
      'options given on the command line win); a crawl stopped from the admin page stays stopped.\n' +
      exitCodesHelp(['ok', 'failed', 'usage']) +
      '  (Ctrl-C or SIGTERM is how a daemon is stopped: it exits 0.)\n',
  );
  command.action(async (values: StartValues) => {
    const name = 'start';
    limitHeapGrowth(values.heapGrowth);
    checkWritableDataDir(values.data, name);
    const saved = loadSaved(values.data, name);
    const config = crawlSettingsFor(command, false, saved?.settings ?? null, name);
    // The local fetchers' settings of the last run on this data directory, unless given again.
    const fetcherSettings = localFetcherSettingsFor(command, values, values.data, name);
    const fetcherValues = fetcherSettings.values;
    const tls = readTlsFiles(values);
    if (values.ca !== undefined && tls === undefined) fail('--ca is for local fetchers of an HTTPS queue server: give --tls-cert and --tls-key too', { status: EXIT.usage, command: name });
    // Loaded here, not at the top, so that other commands do not pay for express and the storage stack.
    const { startQueueServer } = await import('../queue-server/daemon.js');
    const created = !existsSync(values.data);
    const stopped = saved?.stopped === true && explicitCrawlSettings(command).seeds === undefined;
    let server;
    try {
      server = await startQueueServer({ dataDir: values.data, host: values.host, port: values.port, tls, publicSearch: values.publicSearch === true, crawl: config, stopped, onDamagedData: exitOnDamagedData(name, (line) => process.stderr.write(`${line}\n`)) });
    } catch (error) {
      // Refused at start (a busy port, a directory in use): a directory this run created is not left behind.
      if (created) rmSync(values.data, { recursive: true, force: true });
      fail(startFailure(error, values.data), { command: name });
    }
    const running = server;
    saveLocalFetcherSettings(values.data, fetcherValues);
    const adminUrl = `${running.url}/admin`;
    const adminTokenFile = resolve(running.adminTokenFile);
    const tokenFile = resolve(running.tokenFile);
    const log = sayer(createLogger({ role: 'start' }), 'message');
    if (fetcherSettings.goOnWith !== null) log(`petrel start: local fetchers ${fetcherSettings.goOnWith}`);
    // Over TLS, local fetchers verify the certificate (the CA, or the self-signed certificate itself)
    // and reach a wildcard listener over loopback, the address a test certificate names.
    const ca = tls === undefined ? undefined : resolve(values.ca ?? values.tlsCert!);
    const fetcherUrl = tls === undefined ? running.url : running.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
    const fetchers = new FetcherChildren({
      label: 'petrel start',
      namePrefix: 'local',
      args: (name) => fetcherArgs(fetcherValues, { serverUrl: fetcherUrl, tokenFile, name, ca }),
      restart: { kind: 'backoff', firstDelayMs: 1000, maxDelayMs: 30_000, healthyRunMs: 60_000 },
      log,
      // Its schedules would wait out --lease-ms with no one fetching them: handed back at once.
      onExit: (fetcher) => {
        const returned = running.service.fetcherGone(fetcher);
        if (returned > 0) log(`petrel start: fetcher ${fetcher}'s ${returned} schedule${returned === 1 ? '' : 's'} handed back to the queue`);
      },
    });
    fetchers.start(values.fetchers);

    // Signals have their handler before `started` is announced: a supervisor that stops this process as
    // soon as it hears `started` gets a clean stop, not the signal's default action (killed at once).
    let stopping = false;
    const stop = async () => {
      if (stopping) {
        // A second signal: the requests in flight are abandoned, not waited for (their URLs are fetched again later).
        log('petrel start: stopping now');
        fetchers.kill();
        return;
      }
      stopping = true;
      log('petrel start: stopping');
      await fetchers.stop();
      const summary = running.service.summary();
      await running.close();
      process.stdout.write(`${JSON.stringify({ event: 'stopped', summary })}\n`);
      process.exit(EXIT.ok);
    };
    supervisedSignals({ onInterrupt: () => void stop(), onTerminate: () => void stop() });

    process.stdout.write(`${JSON.stringify({ event: 'started', url: running.url, adminUrl, adminTokenFile, tokenFile, fetchers: values.fetchers, pid: process.pid })}\n`);
    log(`petrel start: queue server on ${running.url} with ${values.fetchers} local fetcher${values.fetchers === 1 ? '' : 's'}`);
    log(`  admin page:     ${adminUrl}`);
    log(`  admin token:    ${adminTokenFile}  (paste its content into the login form)`);
    log(`  more fetchers:  petrel fetcher --server ${running.url} --token-file ${tokenFile}${ca === undefined ? '' : ` --ca ${ca}`}`);
    const seeds = running.service.config.seeds;
    if (stopped) log(`  the last crawl (${seeds.length} seed${seeds.length === 1 ? '' : 's'}) was stopped: start a crawl from the admin page`);
    else if (seeds.length === 0) log('  no --seed given: start a crawl from the admin page');
    else if (saved !== null && explicitCrawlSettings(command).seeds === undefined) {
      const { queued, waiting } = running.loaded;
      log(`  going on with the saved crawl of ${seeds.slice(0, 3).join(' ')}${seeds.length > 3 ? ` and ${seeds.length - 3} more` : ''} (scope ${running.service.config.scope}): ${queued} URLs queued, ${waiting} waiting`);
    }
    log('Ctrl-C stops the queue server and the local fetchers.');

  });
  return command;
}
