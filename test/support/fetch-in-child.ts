/**
 * Runs one fetch (the fetcher's real `fetchItem` and undici Agent, from dist/) in a child process of
 * its own and reports how much that fetch raised the child's peak resident set.
 *
 * Why a child: the vitest worker's RSS is everything that process ever held (the test web's bodies,
 * other cases, other files, heap the GC has not returned), so a bound on it says little about one
 * fetch and hides a leak under headroom. The child's peak (getrusage ru_maxrss, kept by the kernel:
 * no sampling, nothing missed between samples) read just before and just after the fetch is what the
 * fetch itself needed at its worst moment, whatever the GC did meanwhile.
 */
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type { DownloadOptions } from '../../fetcher/download.js';
import type { ItemResult } from '../../shared/protocol.js';
import { assertBuilt, PETREL_BIN } from './petrel-process.js';

export interface ChildFetch {
  readonly result: Pick<ItemResult, 'status' | 'bytes' | 'wireBytes' | 'truncated' | 'error' | 'links'> & { readonly page: unknown };
  /** Peak RSS of the child after its imports and agent were set up, before the fetch (bytes). */
  readonly peakBeforeBytes: number;
  /** How much the fetch raised the child's peak RSS (bytes). */
  readonly peakGrowthBytes: number;
}

const DIST = new URL('../../dist/', pathToFileURL(PETREL_BIN));

/** The child: fetch argv[1] with the options in argv[2], print what it cost as one JSON line. */
const CHILD = `
const [url, optionsJson, downloadUrl, fetchItemUrl] = process.argv.slice(1);
const { createCrawlAgent } = await import(downloadUrl);
const { fetchItem } = await import(fetchItemUrl);
const options = JSON.parse(optionsJson);
// The test web is on loopback: allowed here as a seed's host would be in a crawl (fetcher/address-guard.ts).
const agent = createCrawlAgent({ ...options, connectionsPerOrigin: 2, addressPolicy: { allowAll: true, trustedOrigins: { allows: () => true }, resolve: new Map() } });
const kib = () => process.resourceUsage().maxRSS;
const before = kib();
const result = await fetchItem({ dispatcher: agent, download: options }, 0, { i: 0, url, kind: 'page', depth: 0, validators: null });
const after = kib();
await agent.close();
const { status, bytes, wireBytes, truncated, error, links, page } = result;
process.stdout.write(JSON.stringify({ result: { status, bytes, wireBytes, truncated, error, links, page }, peakBeforeBytes: before * 1024, peakGrowthBytes: (after - before) * 1024 }) + '\\n');
`;

export function fetchInChild(url: string, options: DownloadOptions): Promise<ChildFetch> {
  assertBuilt();
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', CHILD, url, JSON.stringify(options), new URL('fetcher/download.js', DIST).href, new URL('fetcher/fetch-item.js', DIST).href],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`fetch of ${url} in a child exited with ${code ?? signal}: ${stderr.slice(-2000)}`));
      resolve(JSON.parse(stdout) as ChildFetch);
    });
  });
}
