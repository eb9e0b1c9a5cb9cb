/**
 * Liveness and readiness: the queue server listens before its stores are open (ops/readiness.ts).
 * While starting, /healthz is 200, /readyz 503 "starting", and other requests are held, then served by
 * the app once it is open (or answered 503 if the start fails). Once serving, /readyz is 200; while
 * draining it is 503 "draining". Real HTTP servers on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type RequestListener, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReadinessGate } from '../../queue-server/ops/readiness.js';
import { startQueueServer } from '../../queue-server/daemon.js';
import { PROTOCOL_VERSION, ROUTES } from '../../shared/protocol.js';
import { SIGNATURE_HEADERS } from '../../shared/request-signing.js';
import { signatureFor } from '../support/signed-request.js';

const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function serve(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function get(url: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    })
      .on('error', reject)
      .end();
  });
}

describe('the readiness gate while the stores open', () => {
  it('answers /healthz, says /readyz "starting", holds other requests and hands them to the app when it opens', async () => {
    const gate = new ReadinessGate();
    const base = await serve(gate.handler);
    expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    expect(await get(`${base}/readyz`)).toEqual({ status: 503, body: { ready: false, reason: 'starting' } });
    let answered = false;
    const held = get(`${base}/api/status?x=1`).then((answer) => ((answered = true), answer));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(answered).toBe(false);
    gate.open((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ served: req.url })));
    expect(await held).toEqual({ status: 200, body: { served: '/api/status?x=1' } });
    expect(await get(`${base}/readyz`)).toEqual({ status: 200, body: { served: '/readyz' } });
  });

  it('names the instance on /healthz while starting, so a fetcher meeting a restarting queue server can sign for it', async () => {
    const gate = new ReadinessGate({ headers: { [SIGNATURE_HEADERS.instance]: 'inst-1' } });
    const base = await serve(gate.handler);
    // agent: false, so no kept-alive connection holds the server's close in afterEach.
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      httpRequest(`${base}/healthz`, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, instance: res.headers[SIGNATURE_HEADERS.instance.toLowerCase()] }));
      }).on('error', reject).end();
    });
    expect(headers).toEqual({ status: 200, instance: 'inst-1' });
    gate.fail();
  });

  it('answers held requests 503 when the start fails', async () => {
    const gate = new ReadinessGate();
    const base = await serve(gate.handler);
    const held = get(`${base}/api/v1/claim`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    gate.fail();
    expect((await held).status).toBe(503);
  });
});

describe('a queue server', () => {
  it('is ready once started, and draining (503) once its shutdown began', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petrel-ready-'));
    dirs.push(dir);
    const running = await startQueueServer({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, crawl: { seeds: ['http://127.0.1.1/'], bloomCapacity: 1000, leaseMs: 600_000 }, log: () => undefined });
    expect(await get(`${running.url}/readyz`)).toEqual({ status: 200, body: { ready: true } });
    const instance = (await fetch(`${running.url}/healthz`)).headers.get(SIGNATURE_HEADERS.instance)!;
    const claimBytes = (waitMs: number) => Buffer.from(JSON.stringify({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'f1', name: 'f1', capacity: 1, waitMs, stats: STATS }));
    const claimHead = (body: Buffer) =>
      Object.entries({ ...signatureFor('POST', ROUTES.claim, body, { secret: running.token, instance, fetcherId: 'f1' }), 'Content-Length': String(body.length), Host: 'x' })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
    // The only work (robots.txt of the seed) is leased and never answered, so the next claim parks.
    const first = await fetch(`${running.url}${ROUTES.claim}`, { method: 'POST', headers: signatureFor('POST', ROUTES.claim, claimBytes(0), { secret: running.token, instance, fetcherId: 'f1' }), body: claimBytes(0) });
    expect(((await first.json()) as { kind: string }).kind).toBe('schedule');
    // On one connection: a claim whose body is half sent when the shutdown begins, and behind it
    // (pipelined, so read only once the claim's body is complete) a /readyz: it arrives while draining.
    const socket = connect(Number(new URL(running.url).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const claimBody = claimBytes(30_000);
    // `Expect: 100-continue` makes the server say when it has parsed the claim's head, so the shutdown
    // begins with the claim surely in flight (a fixed wait was too short on a loaded machine).
    socket.write(`POST ${ROUTES.claim} HTTP/1.1\r\nExpect: 100-continue\r\n${claimHead(claimBody)}\r\n`);
    await vi.waitFor(() => expect(received).toContain('HTTP/1.1 100 Continue'), { timeout: 10_000, interval: 10 });
    socket.write(claimBody.subarray(0, 10));
    const closing = running.close();
    socket.write(Buffer.concat([claimBody.subarray(10), Buffer.from('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')]));
    await closing;
    // The claim is sent away (`wait`, not a schedule); the readiness probe behind it hears "draining".
    // Both answers were written before the close finished, but may still be on their way through the
    // socket on a loaded machine: read them before the socket goes.
    await vi.waitFor(
      () => {
        expect(received).toContain('{"kind":"wait"}');
        expect(received).toMatch(/HTTP\/1\.1 503[^]*\{"ready":false,"reason":"draining"\}/);
      },
      { timeout: 10_000, interval: 10 },
    );
    socket.destroy();
  });
});
