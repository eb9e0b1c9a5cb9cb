/**
 * The memory of link strings whose URL is already seen (queue-server/admission/known-links.ts): it
 * answers only for absolute http(s) links, keeps what it holds within two generations, and keeps the
 * most recent links when it forgets.
 */
import { describe, expect, it } from 'vitest';
import { GENERATION_CHARS, GENERATION_LINKS, KnownLinks } from '../../queue-server/admission/known-links.js';
import { urlHash } from '../../shared/url-hash.js';

describe('known links', () => {
  it('remembers absolute http(s) links with their hash or null, and never a relative or other-scheme link', () => {
    const known = new KnownLinks();
    const hash = urlHash('http://127.0.0.2/a');
    known.add('http://127.0.0.2/a', hash);
    known.add('https://127.0.0.2/b', null);
    known.add('/relative', null);
    known.add('c.html', null);
    known.add('ftp://127.0.0.2/d', null);
    expect(known.get('http://127.0.0.2/a')).toBe(hash);
    expect(known.get('https://127.0.0.2/b')).toBeNull();
    expect(known.get('/relative')).toBeUndefined();
    expect(known.get('c.html')).toBeUndefined();
    expect(known.get('ftp://127.0.0.2/d')).toBeUndefined();
    expect(known.size).toBe(2);
  });

  it('holds at most two generations of links, forgetting the oldest first', () => {
    const known = new KnownLinks();
    const link = (n: number): string => `http://127.0.0.2/p/${n}`;
    const total = 3 * GENERATION_LINKS;
    for (let n = 0; n < total; n++) {
      known.add(link(n), null);
      expect(known.size).toBeLessThanOrEqual(2 * GENERATION_LINKS);
    }
    expect(known.get(link(total - 1))).toBeNull();
    expect(known.get(link(total - 2 * GENERATION_LINKS + 1))).toBeNull();
    expect(known.get(link(0))).toBeUndefined();
  });

  it('starts a new generation when the characters of the current one would pass the bound', () => {
    const known = new KnownLinks();
    const long = (n: number): string => `http://127.0.0.2/${String(n).padStart(2000, '0')}`;
    const perGeneration = Math.floor(GENERATION_CHARS / long(0).length);
    for (let n = 0; n < 3 * perGeneration; n++) known.add(long(n), null);
    expect(known.size).toBeLessThanOrEqual(2 * perGeneration);
    expect(known.get(long(0))).toBeUndefined();
    expect(known.get(long(3 * perGeneration - 1))).toBeNull();
  });

  it('forgets everything on clear', () => {
    const known = new KnownLinks();
    known.add('http://127.0.0.2/a', null);
    known.clear();
    expect(known.get('http://127.0.0.2/a')).toBeUndefined();
    expect(known.size).toBe(0);
  });
});
