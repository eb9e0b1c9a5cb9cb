/**
 * The cap on request body bytes held at once across all requests (queue-server/api/body-budget.ts),
 * against a real app on 127.0.0.1 with a 1 MiB budget and the real fetcher client: a signed post that
 * does not fit while another holds the budget gets 503 busy with Retry-After, unread; inflated bytes
 * of a gzip body count too; the fetcher client waits and retries a 503 until it is served; and the
 * budget is whole again once the holder's answer is out.
 */
import { request as httpRequest, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { QueueClient, QueueServerError } from '../../fetcher/queue-client.js';
import { createApp } from '../../queue-server/app.js';
import { PROTOCOL_VERSION, ROUTES, type HeartbeatRequest } from '../../shared/protocol.js';
import { signatureFor } from '../support/signed-request.js';
import { tempCrawlService } from '../support/temp-crawl-service.js';

const TOKEN = 'budget-test-token-0123456789';
const INSTANCE = 'bodyBudgetTestInstance';
const BUDGET = 1024 * 1024;
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(): Promise<string> {
  const crawl = tempCrawlService('budget', { seeds: ['http://example.com/'], bloomCapacity: 1000 });
  const { service } = crawl;
  const app = createApp({ service, token: TOKEN, adminToken: 'budget-admin-token-0123456789', instance: INSTANCE, bodyBytesInFlight: BUDGET });
  const listening: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  cleanups.push(async () => {
    listening.closeAllConnections();
    await new Promise<void>((resolve) => listening.close(() => resolve()));
    crawl.close();
  });
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

/** A results post of exactly `bytes` bytes of JSON (an empty batch for an unknown schedule, padded with spaces). */
function resultsBytes(bytes: number, fetcherId: string): Buffer {
  const json = JSON.stringify({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId: 'no-such-schedule', results: [] });
  return Buffer.concat([Buffer.from(json), Buffer.alloc(bytes - json.length, 0x20)]);
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  connection: string | undefined;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
}

/** Starts a signed post of `body`; `sendFirst` bytes go out now, the rest when `finish` is called. */
function startPost(base: string, path: string, body: Buffer, headers: Record<string, string>, sendFirst = body.length): { answer: Promise<Answer>; finish: () => void; req: ClientRequest } {
  let req!: ClientRequest;
  const answer = new Promise<Answer>((resolve, reject) => {
    req = httpRequest(`${base}${path}`, { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], connection: res.headers.connection, body: JSON.parse(text) as Answer['body'] }),
      );
    });
    req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' || (error as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(error)));
    req.write(body.subarray(0, sendFirst));
    if (sendFirst === body.length) req.end();
  });
  return { answer, finish: () => req.end(body.subarray(sendFirst)), req };
}

describe('the body budget', () => {
  it('answers 503 busy with Retry-After, body unread, to a post that does not fit while another holds the budget; the fetcher client waits and is served', async () => {
    const base = await server();
    // The holder: a post of exactly the whole budget, half of it sent, the rest held back.
    const holderBody = resultsBytes(BUDGET, 'holder');
    const holder = startPost(base, ROUTES.results, holderBody, signatureFor('POST', ROUTES.results, holderBody, { secret: TOKEN, instance: INSTANCE, fetcherId: 'holder' }), BUDGET / 2);
    // Wait until the holder's headers are in (its reservation made): a heartbeat is refused from then on.
    const heartbeat: HeartbeatRequest = { protocolVersion: PROTOCOL_VERSION, fetcherId: 'other', name: 'other', scheduleIds: [], stats: STATS };
    let refused: Answer | null = null;
    for (let i = 0; i < 200 && refused === null; i++) {
      const body = Buffer.from(JSON.stringify(heartbeat));
      const answer = await startPost(base, ROUTES.heartbeat, body, signatureFor('POST', ROUTES.heartbeat, body, { secret: TOKEN, instance: INSTANCE, fetcherId: 'other' })).answer;
      if (answer.status === 503) refused = answer;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(refused, 'a post refused while the budget is held').not.toBeNull();
    expect(refused!.body.error!.code).toBe('busy');
    expect(refused!.retryAfter).toBe('1');
    expect(refused!.connection).toBe('close');

    // The real client: retried after the Retry-After, served once the holder is done.
    const retries: unknown[] = [];
    const stop = new AbortController();
    const client = new QueueClient({ serverUrl: base, token: TOKEN, signal: stop.signal, onRetry: (_what, _attempt, error) => retries.push(error) });
    cleanups.push(() => client.close());
    const served = client.heartbeat(heartbeat);
    await (async () => {
      while (retries.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    })();
    holder.finish();
    expect((await holder.answer).status).toBe(200);
    expect(await served).toEqual({ unknownScheduleIds: [] });
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]).toBeInstanceOf(QueueServerError);
    expect(retries[0]).toMatchObject({ status: 503, code: 'busy' });

    // The budget is whole again: another post of all of it is served.
    const again = resultsBytes(BUDGET, 'again');
    const answer = await startPost(base, ROUTES.results, again, signatureFor('POST', ROUTES.results, again, { secret: TOKEN, instance: INSTANCE, fetcherId: 'again' })).answer;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ applied: 0, duplicates: 0, leaseActive: false });
  });

  it('counts the inflated bytes of a gzip body: 2 KiB that inflate to twice the budget get 503 busy', async () => {
    const base = await server();
    const zipped = gzipSync(resultsBytes(2 * BUDGET, 'zipper'));
    expect(zipped.length).toBeLessThan(BUDGET / 100);
    const answer = await startPost(base, ROUTES.results, zipped, signatureFor('POST', ROUTES.results, zipped, { secret: TOKEN, instance: INSTANCE, fetcherId: 'zipper', contentEncoding: 'gzip' })).answer;
    expect(answer.status).toBe(503);
    expect(answer.body.error!.code).toBe('busy');
    // Once inflated bytes are given back, a body that fits is served.
    const small = gzipSync(resultsBytes(BUDGET / 2, 'zipper'));
    const fits = await startPost(base, ROUTES.results, small, signatureFor('POST', ROUTES.results, small, { secret: TOKEN, instance: INSTANCE, fetcherId: 'zipper', contentEncoding: 'gzip' })).answer;
    expect(fits.status).toBe(200);
  });
});
