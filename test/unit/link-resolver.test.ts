/**
 * fetcher/link-resolver.ts: a page's links resolved through the resolver's remembered answers are
 * exactly what a fresh parse gives (normalizeUrl), whatever pages of the same directory came before;
 * and what it remembers stays within its bounds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dependsOnDirectoryOnly, directoryOf, LinkResolver, MAX_CHARS, MAX_DIRECTORIES, MAX_LINKS } from '../../fetcher/link-resolver.js';
import { normalizeUrl } from '../../shared/url-normalize.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`link-resolver fast-check seed ${seed} (set FC_SEED to replay)`);

const MAX_URL = 2048;

const segment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'doc', 'x.html', 'index.html', 'A%2fB', '%7Euser', 'é', '日本') },
  { weight: 1, arbitrary: fc.constantFrom('.', '..', '', '%2e%2e') },
);
const path = fc.array(segment, { maxLength: 4 }).map((segments) => segments.join('/'));
const query = fc.option(fc.constantFrom('q=1', 'a=b&c', '', 'x=%41'), { nil: undefined });

/** A directory of a site, and pages in it (different last segments and queries): the bases of one test. */
const pagesArb = fc.record({
  origin: fc.constantFrom('http://example.com', 'https://example.com', 'http://127.0.0.2:8080', 'http://[::1]'),
  directory: fc.array(fc.constantFrom('a', 'b', 'docs', 'x y'), { maxLength: 3 }),
  pages: fc.array(fc.tuple(fc.constantFrom('', 'p.html', 'q', 'index.html'), query), { minLength: 1, maxLength: 5 }),
});

/** References as pages write them: relative, absolute, scheme-relative, queries, fragments, and what the parser strips or rejects. */
const hrefArb = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('', './', '../', '../../', '/'), path, query).map(([lead, p, q]) => `${lead}${p}${q === undefined ? '' : `?${q}`}`) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('?', '#', '', ' ', '\t', '\u0001', '\\', '//', 'http:', 'HTTP:', 'http:?', 'http: ', 'ht\ttp:?', 'https:', 'http://other.example/', 'javascript:', 'mailto:'), path).map(([lead, p]) => `${lead}${p}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);

describe('LinkResolver', () => {
  it('answers every reference as a fresh parse does, across pages of the same directories', () => {
    fc.assert(
      fc.property(fc.array(pagesArb, { minLength: 1, maxLength: 4 }), fc.array(hrefArb, { minLength: 1, maxLength: 12 }), (sites, hrefs) => {
        const resolver = new LinkResolver(MAX_URL);
        // Each page resolves the same references, so later pages of a directory take remembered answers.
        for (const site of sites) {
          for (const [last, q] of site.pages) {
            const base = normalizeUrl(`${site.origin}/${[...site.directory, last].join('/')}${q === undefined ? '' : `?${q}`}`);
            if (!base.ok) continue;
            const resolve = resolver.forPage(base.url);
            for (const href of hrefs) expect(resolve(href)).toEqual(normalizeUrl(href, base.url, MAX_URL));
          }
        }
      }),
      { seed, numRuns: 500 },
    );
  });

  it('cuts a base URL at the last slash of its path, never inside its query', () => {
    expect(directoryOf('http://h/')).toBe('http://h/');
    expect(directoryOf('http://h/a/b.html')).toBe('http://h/a/');
    expect(directoryOf('http://h/a/b/?x=/y/z')).toBe('http://h/a/b/');
    expect(directoryOf('http://h/a?x=/y')).toBe('http://h/');
    expect(directoryOf('http://[::1]:8080/a/b')).toBe('http://[::1]:8080/a/');
  });

  it('parses afresh what depends on more than the directory (the base query, the page itself, stripped characters)', () => {
    for (const href of ['', '?q=1', '#top', ' x', '\tx', '\u0000x', 'http:', 'HTTP:?q', 'http:#f', 'http: x', 'a\tb', 'ht\ttp:?q', 'x\n']) expect(dependsOnDirectoryOnly(href)).toBe(false);
    for (const href of ['x', '../x', '/x', '//h/x', 'http:x', 'https://h/?q', 'mailto:a@b', '\\x', 'é', 'a:b']) expect(dependsOnDirectoryOnly(href)).toBe(true);
    // The same query reference from two pages of one directory: two different answers.
    const resolver = new LinkResolver(MAX_URL);
    expect(resolver.forPage('http://h/a/one.html')('?q=1')).toEqual(normalizeUrl('http://h/a/one.html?q=1'));
    expect(resolver.forPage('http://h/a/two.html')('?q=1')).toEqual(normalizeUrl('http://h/a/two.html?q=1'));
  });

  it('remembers at most MAX_DIRECTORIES directories of at most MAX_LINKS answers each', () => {
    const resolver = new LinkResolver(MAX_URL);
    for (let d = 0; d < MAX_DIRECTORIES + 10; d++) {
      const resolve = resolver.forPage(`http://h/d${d}/page.html`);
      for (let l = 0; l < MAX_LINKS + 50; l++) resolve(`l${l}.html`);
    }
    expect(resolver.directories).toBe(MAX_DIRECTORIES);
    expect(resolver.answers).toBe(MAX_DIRECTORIES * MAX_LINKS);
    // The least recently used directory went first: d0 is forgotten, the last one is kept.
    expect(resolver.remembers('http://h/d0/', 'l0.html')).toBe(false);
    expect(resolver.remembers(`http://h/d${MAX_DIRECTORIES + 9}/`, 'l0.html')).toBe(true);
    // Still the same answers past the bounds.
    expect(resolver.forPage('http://h/d0/other.html')(`l${MAX_LINKS + 10}.html`)).toEqual(normalizeUrl(`http://h/d0/l${MAX_LINKS + 10}.html`));
  });

  it('holds at most MAX_CHARS characters, forgetting older directories first, whatever the references', () => {
    const resolver = new LinkResolver(MAX_URL);
    const long = (i: number) => `${String(i).padStart(6, '0')}${'x'.repeat(5_000)}`;
    // One directory's long references: kept until the budget is spent, then answered without being kept.
    const first = resolver.forPage('http://h/first/page.html');
    for (let i = 0; i < MAX_LINKS; i++) expect(first(long(i))).toEqual(normalizeUrl(long(i), 'http://h/first/page.html', MAX_URL));
    expect(resolver.chars).toBeLessThanOrEqual(MAX_CHARS);
    expect(resolver.answers).toBe(Math.floor(MAX_CHARS / long(0).length));
    // Another directory's answer makes room by forgetting the first directory.
    const second = resolver.forPage('http://h/second/page.html');
    expect(second(long(1))).toEqual(normalizeUrl(long(1), 'http://h/second/page.html', MAX_URL));
    expect(resolver.remembers('http://h/second/', long(1))).toBe(true);
    expect(resolver.directories).toBe(1);
    expect(resolver.chars).toBe(long(1).length);
  });

  it('keeps a recently used directory over older ones', () => {
    const resolver = new LinkResolver(MAX_URL);
    resolver.forPage('http://h/keep/a.html')('x.html');
    for (let d = 0; d < MAX_DIRECTORIES - 1; d++) resolver.forPage(`http://h/d${d}/a.html`)('x.html');
    resolver.forPage('http://h/keep/b.html'); // used again: now the most recent
    resolver.forPage('http://h/new/a.html')('x.html'); // one directory too many: the oldest other goes
    expect(resolver.remembers('http://h/keep/', 'x.html')).toBe(true);
    expect(resolver.remembers('http://h/d0/', 'x.html')).toBe(false);
  });
});
