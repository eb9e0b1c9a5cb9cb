/**
 * Back-pressure of the status stream (queue-server/api/status-stream.ts), with a real HTTP server on
 * 127.0.0.1 and real TCP clients: a client that never reads must not make the server buffer event
 * after event (the server's own buffered bytes for it stay within one event), and it is disconnected
 * once it has been stalled for the stall limit; a client that only reads slowly gets, once it drains,
 * the latest snapshot rather than every stale one. Each snapshot here is 2 MB, so loopback's socket
 * buffers fill within a few events; the crawl's changes are real (pause and resume of a CrawlService).
 */
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { CrawlService } from '../../queue-server/crawl/crawl-service.js';
import { streamStatus } from '../../queue-server/api/status-stream.js';
import { tempCrawlService } from '../support/temp-crawl-service.js';

const SNAPSHOT_BYTES = 2 * 1024 * 1024;
/** What an event adds to its snapshot: the event line, `data: `, the seq field, the blank line. */
const EVENT_SLACK = 1024;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Harness {
  readonly service: CrawlService;
  readonly url: URL;
  /** The server's side of every connection, to read what it has buffered. */
  readonly sockets: Socket[];
  /** Bumped on every change the test makes; each snapshot carries it. */
  seq: number;
  /** Makes a real change of the crawl (pause or resume), which the stream reports. */
  change(): void;
}

async function harness(stallLimitMs: number): Promise<Harness> {
  const crawl = tempCrawlService('stream', { seeds: ['http://example.com/'], bloomCapacity: 1000 });
  const { service } = crawl;
  const pad = 'x'.repeat(SNAPSHOT_BYTES);
  const h: Harness = {
    service,
    url: new URL('http://127.0.0.1/'),
    sockets: [],
    seq: 0,
    change() {
      h.seq++;
      if (h.seq % 2 === 1) service.pause();
      else service.resume();
    },
  };
  const app = express();
  app.get('/stream', (req, res) => streamStatus(service, req, res, { snapshot: () => ({ seq: h.seq, pad }), stallLimitMs }));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  server.on('connection', (socket) => h.sockets.push(socket));
  h.url.port = String((server.address() as AddressInfo).port);
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    crawl.close();
  });
  return h;
}

/** Opens the stream and never reads a byte of it. */
function nonReadingClient(h: Harness): Socket {
  const socket = connect(Number(h.url.port), '127.0.0.1');
  socket.pause();
  socket.on('error', () => undefined);
  socket.write(`GET /stream HTTP/1.1\r\nHost: ${h.url.host}\r\nAccept: text/event-stream\r\n\r\n`);
  cleanups.push(() => void socket.destroy());
  return socket;
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the status stream under a client that does not read', () => {
  it('buffers at most one event for it, and disconnects it once it has been stalled for the stall limit', async () => {
    const h = await harness(1500);
    const listenersBefore = h.service.listenerCount('change');
    nonReadingClient(h);
    await until(() => h.sockets.length === 1, 'the server has the connection');
    const serverSide = h.sockets[0]!;
    let maxBuffered = 0;
    // Changes keep coming (the stream sends at most four events a second), and the buffered bytes are sampled.
    const changer = setInterval(() => h.change(), 50);
    const sampler = setInterval(() => (maxBuffered = Math.max(maxBuffered, serverSide.writableLength)), 10);
    cleanups.push(() => {
      clearInterval(changer);
      clearInterval(sampler);
    });
    // Without back-pressure the buffer only grows; stop watching once it is past four events.
    await until(() => serverSide.destroyed || serverSide.writableLength > 4 * SNAPSHOT_BYTES, 'the stalled client is disconnected');
    maxBuffered = Math.max(maxBuffered, serverSide.writableLength);
    clearInterval(changer);
    clearInterval(sampler);
    expect(maxBuffered, `the server buffered ${maxBuffered} bytes`).toBeLessThanOrEqual(SNAPSHOT_BYTES + EVENT_SLACK);
    // It was congested at some point (else this test would prove nothing), then dropped, its listeners with it.
    expect(maxBuffered).toBeGreaterThan(0);
    expect(serverSide.destroyed).toBe(true);
    await until(() => h.service.listenerCount('change') === listenersBefore, 'the stream has let go of the service');
  });

  it('sends a slow client the latest snapshot once it drains, never one older than what it has', async () => {
    const h = await harness(60_000);
    const client = nonReadingClient(h);
    await until(() => h.sockets.length === 1, 'the server has the connection');
    const serverSide = h.sockets[0]!;
    let maxBuffered = 0;
    const sampler = setInterval(() => (maxBuffered = Math.max(maxBuffered, serverSide.writableLength)), 10);
    cleanups.push(() => clearInterval(sampler));
    // Change the crawl until the server holds bytes it cannot hand to the socket, then a few more times.
    await until(() => {
      h.change();
      return serverSide.writableLength > 0;
    }, 'the socket needs draining');
    for (let i = 0; i < 10; i++) {
      h.change();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const latest = h.seq;

    // Now the client reads everything.
    const seqs: number[] = [];
    let text = '';
    client.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        const seq = /^data: \{"seq":(\d+),/m.exec(event);
        if (event.includes('event: status') && seq !== null) seqs.push(Number(seq[1]));
      }
    });
    client.resume();
    await until(() => seqs.at(-1) === latest, `the snapshot of change ${latest} arrives`);
    clearInterval(sampler);
    expect(maxBuffered, `the server buffered ${maxBuffered} bytes`).toBeLessThanOrEqual(SNAPSHOT_BYTES + EVENT_SLACK);
    // In order, never repeating one, and every change since the stall reported by the one latest snapshot.
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(serverSide.destroyed).toBe(false);
  });
});
