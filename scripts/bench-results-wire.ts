/**
 * What a results post costs on the wire, in its two forms: the fetcher fetches the test web's pages
 * with its own code (fetchItem: extraction, index data, WARC records, as in a crawl), batches them 64 to
 * a post, and then, interleaved round by round so that a busy machine disturbs both alike, each form is
 * encoded as the fetcher does (JSON with base64 captures; the binary frame) and read back as the queue
 * server's results route does (bounded JSON parse, schema, base64 decode; frame decode with the same
 * checks). Prints CPU ms per page on each side and bytes per page, and what gzipping a frame costs a
 * fetcher whose queue server is on another machine.
 *
 *   npm run build && node dist/scripts/bench-results-wire.js [PAGES] [ROUNDS]
 */
import { loadavg } from 'node:os';
import { constants, gzipSync } from 'node:zlib';
import { TrustedOrigins } from '../fetcher/address-guard.js';
import { createCrawlAgent } from '../fetcher/download.js';
import { POST_GZIP_LEVEL } from '../fetcher/queue-client.js';
import { fetchItem } from '../fetcher/fetch-item.js';
import { JSON_BOUNDS } from '../queue-server/api/bounded-json.js';
import { FrameBody, parseBoundedJson } from '../queue-server/api/request-auth.js';
import { readResultsBody } from '../queue-server/api/results-body.js';
import { PROTOCOL_VERSION, resultsToJson, type ItemResult, type ResultsRequest } from '../shared/protocol.js';
import { encodeResultsFrame } from '../shared/results-frame.js';
import { startTestWeb } from './test-web.js';

const POST_RESULTS = 64;

async function fetchResults(pages: number): Promise<ItemResult[]> {
  const web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: pages });
  const options = { userAgent: 'Petrel-bench/1', maxBodyBytes: 2 * 1024 * 1024, connectTimeoutMs: 5000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, totalTimeoutMs: 10_000 };
  const agent = createCrawlAgent({ ...options, connectionsPerOrigin: 8, addressPolicy: { allowAll: true, trustedOrigins: new TrustedOrigins(), resolve: new Map() } });
  try {
    const main = web.hostByRole.main;
    const urls = [...web.model.reachable({ seeds: web.seeds, inScope: (url) => url.startsWith(`${main}/`), maxDepth: 100 }).keys()].slice(0, pages);
    const results: ItemResult[] = [];
    for (const [i, url] of urls.entries()) results.push(await fetchItem({ dispatcher: agent, download: options, archive: true, index: true }, 0, { i, url, kind: 'page', depth: 0, validators: null }));
    return results;
  } finally {
    await agent.close();
    await web.close();
  }
}

function cpuMs(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function main(): Promise<void> {
  const pages = Number(process.argv[2] ?? 512);
  const rounds = Number(process.argv[3] ?? 5);
  const results = await fetchResults(pages);
  const posts: ResultsRequest[] = [];
  for (let i = 0; i < results.length; i += POST_RESULTS) posts.push({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'bench', scheduleId: 'bench:1', results: results.slice(i, i + POST_RESULTS) });
  const n = results.length;
  console.log(`${n} test-web pages fetched with fetchItem (index data and WARC records on), ${posts.length} posts of up to ${POST_RESULTS}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const json = posts.map((p) => Buffer.from(JSON.stringify(resultsToJson(p))));
  const frames = posts.map((p) => Buffer.from(encodeResultsFrame(p)));
  const bytes = (list: Buffer[]) => list.reduce((s, b) => s + b.length, 0) / n;
  console.log(`bytes per page: JSON ${bytes(json).toFixed(0)}, frame ${bytes(frames).toFixed(0)} (${(bytes(frames) / bytes(json)).toFixed(3)}x)`);

  const totals = { jsonEncode: 0, frameEncode: 0, jsonDecode: 0, frameDecode: 0 };
  const decodeJson = (body: Buffer) => readResultsBody(parseBoundedJson(body, JSON_BOUNDS).value, 'bench');
  const decodeFrame = (body: Buffer) => readResultsBody(new FrameBody(body, JSON_BOUNDS), 'bench');
  // One warm-up round, then `rounds` measured, each form in turn.
  for (let round = 0; round <= rounds; round++) {
    const t = {
      jsonEncode: cpuMs(() => posts.forEach((p) => Buffer.from(JSON.stringify(resultsToJson(p))))),
      frameEncode: cpuMs(() => posts.forEach((p) => encodeResultsFrame(p))),
      jsonDecode: cpuMs(() => json.forEach(decodeJson)),
      frameDecode: cpuMs(() => frames.forEach(decodeFrame)),
    };
    if (round === 0) continue;
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += t[key];
  }
  const per = (ms: number) => (ms / rounds / n).toFixed(4);
  console.log(`fetcher, encode a post:     JSON ${per(totals.jsonEncode)} ms/page, frame ${per(totals.frameEncode)} ms/page (${(totals.frameEncode / totals.jsonEncode).toFixed(3)}x)`);
  console.log(`queue server, read a post:  JSON ${per(totals.jsonDecode)} ms/page, frame ${per(totals.frameDecode)} ms/page (${(totals.frameDecode / totals.jsonDecode).toFixed(3)}x)`);
  // A fetcher whose queue server is not on loopback gzips each post (fetcher/queue-client.ts): what
  // that costs it at the level it uses and at zlib's default, in turns.
  const gzipTotals = new Map<number, { ms: number; bytes: number }>([[constants.Z_DEFAULT_COMPRESSION, { ms: 0, bytes: 0 }], [POST_GZIP_LEVEL, { ms: 0, bytes: 0 }]]);
  for (let round = 0; round <= rounds; round++) {
    for (const [level, total] of gzipTotals) {
      let out = 0;
      const ms = cpuMs(() => frames.forEach((f) => (out += gzipSync(f, { level }).length)));
      if (round === 0) continue;
      total.ms += ms;
      total.bytes += out;
    }
  }
  const gz = (level: number) => `${per(gzipTotals.get(level)!.ms)} ms/page, ${(gzipTotals.get(level)!.bytes / rounds / n).toFixed(0)} bytes/page`;
  console.log(`fetcher, gzip a frame (not on loopback): level ${POST_GZIP_LEVEL} ${gz(POST_GZIP_LEVEL)}; zlib's default (6) ${gz(constants.Z_DEFAULT_COMPRESSION)}`);
  console.log(`load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}

await main();
