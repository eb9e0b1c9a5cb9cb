/**
 * `npm run demo`: the main job on a machine with no network. Starts the test web (many hosts on
 * 127.0.0.x with robots.txt, redirects, errors and a calendar trap) and runs a real `petrel crawl`
 * of it, with a queue server and two fetcher processes, then prints where the data went.
 * Everything stays on loopback.
 *
 * Run again on the same data directory, it starts the test web on the port the last run used (kept
 * in `<data>/demo-web-port`), so the second crawl is what a real recrawl is: the same URLs, answered
 * 304 where the pages have not changed. On a random port the URLs of the first run would all be gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestWeb } from './test-web.js';

const dataDir = process.argv[2] ?? './petrel-data/demo';
const portFile = join(dataDir, 'demo-web-port');
const saved = existsSync(portFile) ? Number(readFileSync(portFile, 'utf8').trim()) : 0;
const lastPort = Number.isInteger(saved) && saved > 0 && saved < 65536 ? saved : 0;
const webOptions = { pagesPerHost: 200, hosts: 3, slowMs: 500 };
let web;
try {
  web = await startTestWeb({ ...webOptions, port: lastPort });
} catch (error) {
  if (lastPort === 0) throw error;
  process.stderr.write(`demo: port ${lastPort}, where the last demo's test web ran, is taken (${(error as Error).message}): a test web on another port, so this crawl finds the last one's URLs gone\n`);
  web = await startTestWeb({ ...webOptions, port: 0 });
}
mkdirSync(dataDir, { recursive: true });
writeFileSync(portFile, `${web.port}\n`);
process.stderr.write(`demo: test web on ${web.origins.join(' ')}\n`);
const petrel = fileURLToPath(new URL('../cli/petrel.js', import.meta.url));
const args = ['crawl', ...web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`])];
args.push('--scope', 'host', '--max-depth', '8', '--delay-ms', '20', '--host-concurrency', '2', '--fetchers', '2', '--data', dataDir);
// The test web has a host whose robots.txt always fails and pages that always answer 500: short retry
// waits keep the demo to seconds (the defaults, 60 s and 30 s doubling, are meant for real hosts).
args.push('--robots-retry-ms', '1000', '--robots-attempts', '2', '--max-retries', '1', '--retry-base-ms', '500');
process.stderr.write(`demo: petrel ${args.join(' ')}\n`);
const child = spawn(process.execPath, [petrel, ...args], { stdio: 'inherit' });
const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
await web.close();
// petrel crawl itself says where the data is and what to do next.
process.exit(code ?? 1);
