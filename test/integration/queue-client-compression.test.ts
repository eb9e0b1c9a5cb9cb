/**
 * The fetcher's client compresses what it posts (fetcher/queue-client.ts, gzip on the thread pool) and
 * a real queue server accepts it: a recording relay between the two (node:http on 127.0.0.1) sees the
 * bytes as sent, and the queue server applies the result. Without `compress`, a queue server on
 * loopback gets plain JSON.
 */
import { rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { QueueClient } from '../../fetcher/queue-client.js';
import { startQueueServer } from '../../queue-server/daemon.js';
import { PROTOCOL_VERSION, type ItemResult, type Schedule } from '../../shared/protocol.js';
import { tempDir } from '../support/petrel-process.js';

const HOST = '127.0.0.1';
/** Nothing listens on the discard port; the seed only gives the queue server a robots.txt to hand out. */
const SEED = 'http://127.0.0.1:9/start.html';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Relayed {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Forwards every request to `target` unchanged and remembers what it saw. */
async function recordingRelay(target: string): Promise<{ url: string; seen: Relayed[] }> {
  const seen: Relayed[] = [];
  const relay: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const forward = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, HOST, resolve));
  cleanups.push(() => new Promise<void>((resolve) => relay.close(() => resolve())));
  return { url: `http://${HOST}:${(relay.address() as AddressInfo).port}`, seen };
}

function robotsResult(schedule: Schedule, robotsTxt: string): ItemResult {
  const slot = schedule.slots[0]!;
  return {
    slot: slot.slot, i: 0, url: slot.items[0]!.url, fetchedAt: Date.now(), durationMs: 1, status: 200, error: null, contentType: 'text/plain', bytes: robotsTxt.length,
    wireBytes: robotsTxt.length, truncated: false, redirectTo: null, retryAfterMs: null, signature: null, page: null, links: [], robotsTxt, index: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
  };
}

async function postRobots(compress: boolean | undefined): Promise<{ seen: Relayed[]; applied: number }> {
  const dir = tempDir('queue-client-gzip');
  const server = await startQueueServer({ dataDir: join(dir, 'data'), host: HOST, port: 0, crawl: { seeds: [SEED], delayMs: 0, bloomCapacity: 1000 } });
  cleanups.push(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const relay = await recordingRelay(server.url);
  const stop = new AbortController();
  const client = new QueueClient({ serverUrl: relay.url, token: server.token, signal: stop.signal, ...(compress === undefined ? {} : { compress }) });
  cleanups.push(() => client.close());
  const fetcherId = 'gzip-test-1';
  const claim = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: 'gzip test', capacity: 1, waitMs: 0, stats: STATS });
  expect(claim.kind).toBe('schedule');
  if (claim.kind !== 'schedule') throw new Error('no schedule');
  // 100 KB of robots.txt: far over the 16 KiB from which bodies are compressed.
  const robotsTxt = `User-agent: *\n${Array.from({ length: 4000 }, (_, i) => `Disallow: /private-${i}/`).join('\n')}\n`;
  const answer = await client.results({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId: claim.schedule.id, results: [robotsResult(claim.schedule, robotsTxt)] });
  // The client asks GET /healthz for the instance to sign for first: only the signed posts count here.
  return { seen: relay.seen.filter((request) => request.path !== '/healthz'), applied: answer.applied };
}

describe('the fetcher client compressing its posts', () => {
  it('gzips a large results post and the queue server applies it; a small claim goes out plain', async () => {
    const { seen, applied } = await postRobots(true);
    expect(applied).toBe(1);
    const [claim, results] = seen;
    expect(claim!.headers['content-encoding']).toBeUndefined();
    expect(results!.headers['content-encoding']).toBe('gzip');
    const inflated = gunzipSync(results!.body);
    expect(results!.body.length).toBeLessThan(inflated.length / 5);
    expect(JSON.parse(inflated.toString()).results[0].robotsTxt).toContain('Disallow: /private-3999/');
  });

  it('sends plain JSON to a queue server on loopback unless told to compress', async () => {
    const { seen, applied } = await postRobots(undefined);
    expect(applied).toBe(1);
    expect(seen.map((request) => request.headers['content-encoding'])).toEqual([undefined, undefined]);
  });
});
