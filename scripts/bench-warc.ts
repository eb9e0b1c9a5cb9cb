/**
 * What building WARC records costs a fetcher: fetches the test web's pages once (real HTTP on
 * loopback), then builds their captures (shared/warc/exchange.ts `buildCapture`: two SHA-1s, two gzip
 * members) at several zlib levels and prints CPU ms per page and record bytes per page for each.
 *
 *   npm run build && node dist/scripts/bench-warc.js [PAGES]
 */
import { request } from 'node:http';
import { buildCapture, type Exchange } from '../shared/warc/exchange.js';
import { responseHead } from '../shared/warc/http-head.js';
import { startTestWeb } from './test-web.js';

function fetchOne(url: string): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { 'user-agent': 'Petrel-bench/1', 'accept-encoding': 'gzip' } });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          url,
          ipAddress: res.socket?.remoteAddress ?? null,
          startedAt: 0,
          requestHead: Buffer.from((req as unknown as { _header: string })._header, 'latin1'),
          responseHead: responseHead({ status: res.statusCode!, statusText: res.statusMessage ?? '', rawHeaders: res.rawHeaders }),
          responseBody: chunks,
          truncated: null,
        }),
      );
    });
    req.end();
  });
}

const USAGE = `Usage: node dist/scripts/bench-warc.js [PAGES]

Fetches PAGES pages of the test web (default 400, at most 100000; one host on loopback, real HTTP), then
builds their WARC records (shared/warc/exchange.ts buildCapture: two SHA-1s, two gzip members) at zlib
levels 1, 3 and 6 and prints the CPU ms per page and the record bytes per page of each.
`;

async function main(): Promise<void> {
  const arg = process.argv[2];
  if (arg === '--help' || arg === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  const pages = Number(arg ?? 400);
  if (!Number.isInteger(pages) || pages < 1 || pages > 100_000 || process.argv.length > 3) {
    process.stderr.write(`bench-warc: expected one page count from 1 to 100000, got ${JSON.stringify(process.argv.slice(2).join(' '))}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: pages });
  try {
    const main = web.hostByRole.main;
    const urls = [...web.model.reachable({ seeds: web.seeds, inScope: (url) => url.startsWith(`${main}/`), maxDepth: 100 }).keys()].slice(0, pages);
    const exchanges: Exchange[] = [];
    for (const url of urls) exchanges.push(await fetchOne(url));
    const bodyBytes = exchanges.reduce((sum, e) => sum + e.responseBody.reduce((s, c) => s + c.length, 0), 0);
    console.log(`${exchanges.length} pages, ${(bodyBytes / exchanges.length / 1024).toFixed(1)} KiB of body per page on average`);
    // Warm-up, untimed: every page at every level once, so that the level timed first does not pay
    // alone for the compiler's warm-up (it had 20 captures of warm-up before).
    for (const level of [1, 3, 6]) for (const e of exchanges) buildCapture(e, { maxBodyBytes: 2 * 1024 * 1024, gzipLevel: level });
    for (const level of [1, 3, 6]) {
      let bytes = 0;
      const start = process.cpuUsage();
      for (const e of exchanges) {
        const capture = buildCapture(e, { maxBodyBytes: 2 * 1024 * 1024, gzipLevel: level });
        bytes += capture.requestRecord.length + capture.responseRecord.length;
      }
      const used = process.cpuUsage(start);
      const ms = (used.user + used.system) / 1000;
      console.log(`gzip level ${level}: ${(ms / exchanges.length).toFixed(3)} ms CPU per page, ${(bytes / exchanges.length / 1024).toFixed(2)} KiB of records per page`);
    }
  } finally {
    await web.close();
  }
}

await main();
