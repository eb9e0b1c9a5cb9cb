/**
 * Crawl scope (queue-server/admission/scope.ts): which URLs each kind takes, and that seeds added one
 * at a time (inject) widen it exactly as the same seeds given at the start would.
 */
import { describe, expect, it } from 'vitest';
import { directoryPrefix, makeScope, SCOPES } from '../../queue-server/admission/scope.js';
import { normalizeUrl, type NormalizedUrl } from '../../shared/url-normalize.js';

function url(text: string): NormalizedUrl {
  const result = normalizeUrl(text);
  if (!result.ok) throw new Error(`not a URL: ${text}`);
  return result.url;
}

const SEEDS = ['http://a.example.org/docs/index.html', 'https://b.example.org:8443/x/y/z.html', 'http://10.1.2.3/'].map(url);

/** URLs and which kinds take them with SEEDS. */
const CASES: [string, ('prefix' | 'host' | 'domain' | 'any')[]][] = [
  ['http://a.example.org/docs/other.html', ['prefix', 'host', 'domain', 'any']],
  ['http://a.example.org/docs/deep/er.html?q=1', ['prefix', 'host', 'domain', 'any']],
  ['http://a.example.org/doc', ['host', 'domain', 'any']],
  ['https://a.example.org/docs/other.html', ['host', 'domain', 'any']],
  ['http://a.example.org:81/docs/other.html', ['host', 'domain', 'any']],
  ['http://c.example.org/docs/other.html', ['domain', 'any']],
  ['https://b.example.org:8443/x/y/', ['prefix', 'host', 'domain', 'any']],
  ['https://b.example.org:8443/x/', ['host', 'domain', 'any']],
  ['http://10.1.2.3/anything', ['prefix', 'host', 'domain', 'any']],
  ['http://10.1.2.4/anything', ['any']],
  ['http://example.com/docs/index.html', ['any']],
];

describe('crawl scope', () => {
  for (const kind of SCOPES) {
    it(`${kind}: takes the seeds and exactly the URLs of its kind`, () => {
      const scope = makeScope(kind, SEEDS);
      for (const seed of SEEDS) expect(scope.has(seed), seed).toBe(true);
      for (const [text, kinds] of CASES) expect(scope.has(url(text)), `${kind} ${text}`).toBe(kinds.includes(kind));
    });

    it(`${kind}: seeds added one by one give the same scope as seeds given at the start; a seed added twice is kept once`, () => {
      const grown = makeScope(kind, []);
      for (const seed of SEEDS) expect(grown.add(seed)).toBe(true);
      expect(grown.add(SEEDS[0]!)).toBe(false);
      const given = makeScope(kind, SEEDS);
      for (const [text] of CASES) expect(grown.has(url(text)), text).toBe(given.has(url(text)));
    });
  }

  it('prefix: a seed is in scope even where its own directory rule would not take it back (a URL with a query)', () => {
    const seed = url('http://a.example.org/search?q=x');
    const scope = makeScope('prefix', [seed]);
    expect(directoryPrefix(seed)).toBe('http://a.example.org/');
    expect(scope.has(seed)).toBe(true);
    expect(scope.has(url('http://a.example.org/other'))).toBe(true);
  });

  it('prefix: with many seeds on many origins, each URL is judged by its own origin\'s prefixes', () => {
    const seeds = Array.from({ length: 5000 }, (_, i) => url(`http://h${i % 500}.example.org/d${i}/index.html`));
    const scope = makeScope('prefix', seeds);
    expect(scope.has(url('http://h7.example.org/d7/page.html'))).toBe(true);
    expect(scope.has(url('http://h7.example.org/d8/page.html'))).toBe(false);
    expect(scope.has(url('http://h8.example.org/d8/page.html'))).toBe(true);
    expect(scope.has(url('http://h9.example.org/d8/page.html'))).toBe(false);
  });
});
