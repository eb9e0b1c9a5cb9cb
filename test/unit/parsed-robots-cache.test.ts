/**
 * robots.txt rules in bounded memory: the cache of parsed files (queue-server/robots/parsed-robots-cache.ts)
 * keeps at most its bound, least recently used out first, and an origin whose parsed file fell out
 * answers with the same verdicts, parsed again from the robots store on disk
 * (queue-server/robots/robots-store.ts, queue-server/robots/origin-robots.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ParsedRobotsCache } from '../../queue-server/robots/parsed-robots-cache.js';
import { OriginRobots } from '../../queue-server/robots/origin-robots.js';
import { RobotsStore } from '../../queue-server/robots/robots-store.js';
import { crawlDelayOf, robotsVerdict } from '../../queue-server/robots/robots.js';
import { mustNormalize } from '../../shared/url-normalize.js';

const POLICY = { userAgentToken: 'petrel', unreachableRetryMs: 60_000, attempts: 3 };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempStore(maxFiles: number): RobotsStore {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-robots-'));
  dirs.push(dir);
  return RobotsStore.open(join(dir, 'robots.btree'), { parsedCache: { maxFiles, maxChars: 1 << 20 } });
}

describe('ParsedRobotsCache', () => {
  it('holds at most its number of files, forgetting the least recently used first', () => {
    const cache = new ParsedRobotsCache<string>({ maxFiles: 2, maxChars: 1000 });
    cache.set('a', 1, 'A', 10);
    cache.set('b', 1, 'B', 10);
    expect(cache.get('a', 1)).toBe('A'); // a is now the most recent
    cache.set('c', 1, 'C', 10);
    expect([cache.get('a', 1), cache.get('b', 1), cache.get('c', 1)]).toEqual(['A', undefined, 'C']);
    expect(cache.stats()).toMatchObject({ files: 2, chars: 20 });
  });

  it('holds at most its characters of robots.txt text, and the newest file even when it alone is larger', () => {
    const cache = new ParsedRobotsCache<string>({ maxFiles: 100, maxChars: 100 });
    cache.set('a', 1, 'A', 60);
    cache.set('b', 1, 'B', 60);
    expect([cache.get('a', 1), cache.get('b', 1)]).toEqual([undefined, 'B']);
    cache.set('huge', 1, 'H', 500);
    expect(cache.stats()).toMatchObject({ files: 1, chars: 500 });
    expect(cache.get('huge', 1)).toBe('H');
  });

  it('does not answer for another fetch of the same origin', () => {
    const cache = new ParsedRobotsCache<string>({ maxFiles: 2, maxChars: 1000 });
    cache.set('a', 1, 'old', 10);
    expect(cache.get('a', 2)).toBeUndefined();
    cache.set('a', 2, 'new', 10);
    expect(cache.get('a', 2)).toBe('new');
    expect(cache.stats()).toMatchObject({ files: 1, chars: 10 });
  });
});

describe('robots.txt rules of many origins', () => {
  const originOf = (i: number): string => `http://h${i}.example`;
  const bodyOf = (i: number): string => `User-agent: *\nDisallow: /private-${i}/\nCrawl-delay: ${(i % 5) + 1}\n`;

  it('keeps only the bound of parsed files, and answers every origin as its own robots.txt says after its file was parsed again from disk', () => {
    const store = tempStore(3);
    const origins = Array.from({ length: 40 }, (_, i) => new OriginRobots(originOf(i)));
    origins.forEach((robots, i) => robots.fetched({ status: 200, errorCode: null, body: bodyOf(i) }, POLICY, store, 1_000 + i));
    store.commit();
    expect(store.parsedStats().files).toBe(3);
    for (let round = 0; round < 2; round++) {
      origins.forEach((robots, i) => {
        const rules = robots.rules!;
        expect(crawlDelayOf(rules)).toBe(((i % 5) + 1) * 1000);
        expect(robotsVerdict(rules, mustNormalize(`${originOf(i)}/private-${i}/x`), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
        expect(robotsVerdict(rules, mustNormalize(`${originOf(i)}/private-${i + 1}/x`), 'petrel')).toEqual({ allowed: true });
      });
    }
    const stats = store.parsedStats();
    expect(stats.files).toBe(3);
    // Each verdict pair past the first round's misses was asked of the cache; the files were parsed again on misses.
    expect(stats.misses).toBeGreaterThanOrEqual(80);
  });

  it('reads back the rules of the latest fetch when an origin fetched its robots.txt again', () => {
    const store = tempStore(1);
    const robots = new OriginRobots(originOf(1));
    const other = new OriginRobots(originOf(2));
    robots.fetched({ status: 200, errorCode: null, body: 'User-agent: *\nDisallow: /old/\n' }, POLICY, store, 10);
    robots.fetched({ status: 200, errorCode: null, body: 'User-agent: *\nDisallow: /new/\n' }, POLICY, store, 20);
    other.fetched({ status: 200, errorCode: null, body: bodyOf(2) }, POLICY, store, 30); // evicts the first origin's file
    const rules = robots.rules!;
    expect(robotsVerdict(rules, mustNormalize(`${originOf(1)}/new/a`), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
    expect(robotsVerdict(rules, mustNormalize(`${originOf(1)}/old/a`), 'petrel')).toEqual({ allowed: true });
  });

  it('takes an origin whose robots.txt is on disk from a previous process as known, with the rules of that file', () => {
    const store = tempStore(2);
    new OriginRobots(originOf(7)).fetched({ status: 200, errorCode: null, body: bodyOf(7) }, POLICY, store, 1_000);
    store.close();
    const restarted = RobotsStore.open(join(dirs[0]!, 'robots.btree'), { parsedCache: { maxFiles: 2, maxChars: 1 << 20 } });
    const robots = new OriginRobots(originOf(7));
    robots.consultStore(restarted, POLICY, 2_000);
    expect(robots.state).toBe('known');
    expect(robotsVerdict(robots.rules!, mustNormalize(`${originOf(7)}/private-7/`), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
  });
});
