/**
 * A queue server start that takes its queues back from `frontier.btree` takes each origin's robots.txt
 * back from `robots.btree` too, in one ordered pass (RobotsStore.loadMany): an origin whose robots.txt
 * is kept and fresh gets a slot of pages at once, paced by its Crawl-delay, and only an origin without
 * one is asked for its robots.txt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { crawlConfigSchema, fetchScheduleOf } from '../../queue-server/crawl-config.js';
import { Crawl } from '../../queue-server/crawl/crawl.js';
import { openStores } from '../../queue-server/daemon.js';
import { PROTOCOL_VERSION } from '../../shared/protocol.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const CONFIG = crawlConfigSchema.parse({ seeds: ['http://seed.test/'], scope: 'any', delayMs: 0, bloomCapacity: 1000, sitemaps: false });
const POLICY = fetchScheduleOf(CONFIG);
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('a start on queues kept on disk', () => {
  it('knows the robots.txt kept for their origins: pages at once, with the Crawl-delay; robots.txt only where none is kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'petrel-restore-robots-'));
    dirs.push(dir);
    const first = openStores(dir);
    const crawl = new Crawl(CONFIG, first, POLICY, null);
    crawl.load(NOW);
    const origins = ['http://a.test', 'http://b.test', 'http://c.test'];
    expect(crawl.inject(origins.flatMap((origin) => [`${origin}/one.html`, `${origin}/two.html`]), NOW).admitted).toBe(6);
    first.robots!.save({ origin: 'http://a.test', status: 200, errorCode: null, body: 'User-agent: *\nCrawl-delay: 5\nDisallow: /private/', fetchedAt: NOW - 1000 });
    first.robots!.save({ origin: 'http://b.test', status: 200, errorCode: null, body: 'User-agent: *\nAllow: /', fetchedAt: NOW - 1000 });
    crawl.commit();
    first.close();

    const again = openStores(dir);
    try {
      const restarted = new Crawl(CONFIG, again, POLICY, null);
      expect(restarted.load(NOW + 1000)).toMatchObject({ queued: 6 });
      const schedule = restarted.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'f1', name: 'f1', capacity: 10, waitMs: 0, stats: STATS }, '127.0.0.1', NOW + 1000);
      const slots = new Map((schedule?.slots ?? []).map((slot) => [slot.origin, slot]));
      expect([...slots.keys()].sort()).toEqual(origins);
      expect(slots.get('http://a.test')!.items.map((item) => item.kind)).toEqual(['page', 'page']);
      expect(slots.get('http://a.test')!.delayMs).toBe(5000);
      expect(slots.get('http://b.test')!.items.map((item) => item.kind)).toEqual(['page', 'page']);
      expect(slots.get('http://c.test')!.items.map((item) => item.kind)).toEqual(['robots']);
    } finally {
      again.close();
    }
  });
});
