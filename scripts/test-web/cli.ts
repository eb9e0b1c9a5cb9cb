/** The command line: start a test web, print where it is as one JSON line, serve until SIGINT/SIGTERM. */
import { parseArgs } from 'node:util';
import type { TestWebOptions } from './options.js';
import { startTestWeb } from './start.js';

export const USAGE = `Usage: node dist/scripts/test-web.js [options]

Starts the Petrel test web: a deterministic generated web on loopback addresses 127.0.0.2, 127.0.0.3, ...
all on one port, and prints {"port":..,"seeds":[..],"origins":[..]} as one JSON line on stdout.
Serves until SIGINT or SIGTERM.

Options:
  --pages-per-host N    pages of each normal host's generated site, index included (default 30)
  --hosts N             number of normal content hosts (default 3); 'full' adds 4 special hosts and
                        the hostile host (the address after them, printed as "hostile", linked from nowhere)
  --profile full|bench  'full' (default): every edge case (robots 404/500, crawl-delay, trap, redirects,
                        errors, slow and large pages); 'bench': normal hosts only, ~14 KB pages
  --port N              port shared by all hosts (default 0: any free port)
  --slow-ms N           delay of /slow.html in ms (default 1500)
  --crawl-delay N       Crawl-delay of the crawl-delay host in seconds (default 1)
  --help                show this help
`;

export async function runCli(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'pages-per-host': { type: 'string' },
      hosts: { type: 'string' },
      profile: { type: 'string' },
      port: { type: 'string' },
      'slow-ms': { type: 'string' },
      'crawl-delay': { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  const opts: TestWebOptions = {};
  if (values['pages-per-host'] !== undefined) opts.pagesPerHost = numeric('--pages-per-host', values['pages-per-host']);
  if (values.hosts !== undefined) opts.hosts = numeric('--hosts', values.hosts);
  if (values.port !== undefined) opts.port = numeric('--port', values.port);
  if (values['slow-ms'] !== undefined) opts.slowMs = numeric('--slow-ms', values['slow-ms']);
  if (values['crawl-delay'] !== undefined) opts.crawlDelaySeconds = numeric('--crawl-delay', values['crawl-delay']);
  if (values.profile !== undefined) {
    if (values.profile !== 'full' && values.profile !== 'bench') throw new RangeError(`--profile must be full or bench, got ${values.profile}`);
    opts.profile = values.profile;
  }
  const web = await startTestWeb(opts);
  const hostile = (opts.profile ?? 'full') === 'full' ? { hostile: `${web.hostile.origin}/index.html` } : {};
  process.stdout.write(`${JSON.stringify({ port: web.port, seeds: web.seeds, origins: web.origins, ...hostile })}\n`);
  const stop = (): void => {
    void web.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

function numeric(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new RangeError(`${flag} expects a number, got ${text}`);
  return value;
}
