/**
 * `npm run demo`: the main job on a machine with no network. Starts the test web (many hosts on
 * 127.0.0.x with robots.txt, redirects, errors and a calendar trap) and runs a real `petrel crawl`
 * of it, with a queue server and two fetcher processes, then prints where the data went.
 * Everything stays on loopback.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestWeb } from './test-web.js';

const dataDir = process.argv[2] ?? './petrel-data/demo';
const web = await startTestWeb({ pagesPerHost: 200, hosts: 3, slowMs: 500 });
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
