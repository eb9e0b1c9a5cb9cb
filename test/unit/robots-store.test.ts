/**
 * The robots.txt store on disk (queue-server/robots/robots-store.ts): every origin's last fetch in one
 * B-Tree file, a large robots.txt cut into chunks; a data directory of an earlier version (`robots/`,
 * one JSON file per origin) moved into it on open. Real files; each test ends with the tree's check.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RobotsStore, type StoredRobots } from '../../queue-server/robots/robots-store.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-robots-store-'));
  dirs.push(dir);
  return dir;
}

const outcome = (origin: string, body: string | null, fetchedAt = 1_000): StoredRobots => ({ origin, status: body === null ? 404 : 200, errorCode: null, body, fetchedAt });

/** A robots.txt of about `bytes` bytes whose lines differ (so a chunk of one is no chunk of another). */
function bigBody(bytes: number, tag: string): string {
  const lines: string[] = ['User-agent: *'];
  for (let i = 0, size = 14; size < bytes; i++) {
    const line = `Disallow: /${tag}/${i}/`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

function checked(store: RobotsStore): void {
  const report = store.check();
  expect(report.faults).toEqual([]);
}

describe('the robots.txt store', () => {
  it('gives back each origin\'s last outcome after a reopen, a 512 KiB robots.txt whole', () => {
    const path = join(tempDir(), 'robots.btree');
    const store = RobotsStore.open(path);
    const large = bigBody(512 * 1024, 'large');
    store.save(outcome('http://a.example', 'User-agent: *\nDisallow: /a/'));
    store.save(outcome('http://b.example', large));
    store.save(outcome('http://c.example', null));
    // Staged outcomes are seen before the commit.
    expect(store.load('http://b.example')?.body).toBe(large);
    store.close();
    const reopened = RobotsStore.open(path);
    expect(reopened.load('http://a.example')).toEqual(outcome('http://a.example', 'User-agent: *\nDisallow: /a/'));
    expect(reopened.load('http://b.example')?.body).toBe(large);
    expect(reopened.load('http://c.example')).toEqual(outcome('http://c.example', null));
    expect(reopened.load('http://d.example')).toBeNull();
    expect([...reopened.entries()].map((stored) => stored.origin).sort()).toEqual(['http://a.example', 'http://b.example', 'http://c.example']);
    checked(reopened);
    reopened.close();
  });

  it('loads many origins in one pass as load does one by one: committed, staged, chunked, missing', () => {
    const path = join(tempDir(), 'robots.btree');
    const store = RobotsStore.open(path);
    const origins = Array.from({ length: 300 }, (_, n) => `http://h${n}.example`);
    // Every third committed, every fifth of the others staged only, every 50th large (several chunks), the rest missing.
    origins.forEach((origin, n) => {
      if (n % 3 === 0) store.save(outcome(origin, n % 50 === 0 ? bigBody(20_000, `h${n}`) : `User-agent: *\nDisallow: /${n}/`, 1_000 + n));
    });
    store.commit();
    origins.forEach((origin, n) => {
      if (n % 3 !== 0 && n % 5 === 0) store.save(outcome(origin, `User-agent: *\nAllow: /${n}/`, 5_000 + n));
    });
    const found = new Map<string, StoredRobots | null>();
    store.loadMany(origins, (origin, stored) => {
      expect(found.has(origin)).toBe(false);
      found.set(origin, stored);
    });
    expect(found.size).toBe(origins.length);
    for (const origin of origins) expect(found.get(origin)).toEqual(store.load(origin));
    expect([...found.values()].filter((stored) => stored !== null).length).toBe(100 + 40);
    checked(store);
    store.close();
  });

  it('replaces a large robots.txt by a small one without leaving its old chunks behind', () => {
    const path = join(tempDir(), 'robots.btree');
    const store = RobotsStore.open(path);
    store.save(outcome('http://a.example', bigBody(100_000, 'first'), 1_000));
    store.commit();
    const withLarge = store.stats().keys;
    expect(withLarge).toBeGreaterThan(20);
    store.save(outcome('http://a.example', 'User-agent: *\nAllow: /', 2_000));
    store.commit();
    expect(store.stats().keys).toBe(1);
    expect(store.load('http://a.example')).toEqual(outcome('http://a.example', 'User-agent: *\nAllow: /', 2_000));
    // And a large one again, larger than the first: every chunk its own.
    const again = bigBody(150_000, 'second');
    store.save(outcome('http://a.example', again, 3_000));
    store.commit();
    expect(store.load('http://a.example')?.body).toBe(again);
    checked(store);
    store.close();
  });

  it('moves the robots/ files of an earlier version into the tree and removes them', () => {
    const dataDir = tempDir();
    const legacy = join(dataDir, 'robots');
    mkdirSync(legacy);
    const old = [outcome('http://a.example', 'User-agent: *\nDisallow: /old-a/'), outcome('http://b.example', null), outcome('http://c.example', bigBody(20_000, 'c'))];
    // As the file-per-origin store wrote them: JSON named by the origin's hash.
    for (const stored of old) writeFileSync(join(legacy, `${urlHashHex(urlHash(stored.origin))}.json`), JSON.stringify(stored));
    const store = RobotsStore.open(join(dataDir, 'robots.btree'), { legacyDir: legacy });
    expect(existsSync(legacy)).toBe(false);
    for (const stored of old) expect(store.load(stored.origin)).toEqual(stored);
    store.close();
    // Nothing read from the directory afterwards: a reopen finds the same in the tree alone.
    const reopened = RobotsStore.open(join(dataDir, 'robots.btree'), { legacyDir: legacy });
    for (const stored of old) expect(reopened.load(stored.origin)).toEqual(stored);
    checked(reopened);
    reopened.close();
  });

  it('keeps a newer outcome in the tree over a file a move cut short left behind', () => {
    const dataDir = tempDir();
    const legacy = join(dataDir, 'robots');
    const newer = outcome('http://a.example', 'User-agent: *\nDisallow: /newer/', 5_000);
    const store = RobotsStore.open(join(dataDir, 'robots.btree'));
    store.save(newer);
    store.close();
    mkdirSync(legacy);
    writeFileSync(join(legacy, `${urlHashHex(urlHash(newer.origin))}.json`), JSON.stringify(outcome('http://a.example', 'User-agent: *\nDisallow: /older/', 1_000)));
    const reopened = RobotsStore.open(join(dataDir, 'robots.btree'), { legacyDir: legacy });
    expect(reopened.load('http://a.example')).toEqual(newer);
    expect(existsSync(legacy)).toBe(false);
    reopened.close();
  });
});
