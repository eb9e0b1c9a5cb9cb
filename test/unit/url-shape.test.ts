import { readdirSync, readFileSync, existsSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extractPage } from '../../fetcher/html-extract.js';
import { FANOUT_WINDOW, isTrapShape, SHAPE_MIN_PAGES, templateHash, urlShapeOf, UrlShapes, withLinks, withPage, type ShapeStats } from '../../queue-server/admission/url-shape.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`url-shape fast-check seed ${seed} (set FC_SEED to replay)`);

/** The path's shape as url-shape.ts first wrote it, with a regular expression a test (the model of its char-code scan). */
function modelPathShape(path: string): string {
  const part = (segment: string): string => {
    if (/[0-9]/.test(segment) && (/^(?:[0-9a-f]{8,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.test(segment) || (/^[A-Za-z0-9_-]{16,}$/.test(segment) && /[A-Za-z]/.test(segment)))) return '{id}';
    return segment.replace(/[0-9]+/g, '{n}');
  };
  return /[0-9]/.test(path) ? path.split('/').map(part).join('/') : path;
}

describe('URL shapes', () => {
  it('abstracts a path as the regular expressions do, whatever its segments (property, against the model)', () => {
    // Segments near the id lengths (8, 16, 36) of hex digits, the letters just past them, other letters, dashes, underscores and the odd other character.
    const segment = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: 40 }),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdef-'), minLength: 30, maxLength: 40 }),
      fc.uuid(),
      fc.string({ unit: fc.constantFrom(...'09azAZ_-.%~xyzXYZ'), maxLength: 24 }),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdefgxyzABCGXYZ_-'), minLength: 6, maxLength: 18 }),
      fc.string({ unit: fc.constantFrom(...'0123456789é@[`{'), maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6, size: 'max' }), fc.boolean(), (segments, trailingSlash) => {
        const path = `/${segments.join('/')}${trailingSlash ? '/' : ''}`;
        expect(urlShapeOf(`http://a.test${path}`).shape).toBe(`a.test${modelPathShape(path)}`);
        expect(urlShapeOf(`http://a.test${path}?x1=2`).shape).toBe(`a.test${modelPathShape(path)}?x{n}`);
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('abstracts numbers, dates and ids in the path and keeps the sorted parameter names', () => {
    expect(urlShapeOf('http://a.test/events/2024/06/15')).toEqual({ shape: 'a.test/events/{n}/{n}/{n}', family: null });
    expect(urlShapeOf('http://a.test/section-3/page-12.html').shape).toBe('a.test/section-{n}/page-{n}.html');
    expect(urlShapeOf('http://a.test/item/3f2a9c1e7b6d/view').shape).toBe('a.test/item/{id}/view');
    expect(urlShapeOf('http://a.test/search?size=m&color=red&size=l')).toEqual({ shape: 'a.test/search?color&size', family: 'a.test/search?*' });
    expect(urlShapeOf('http://a.test:8080/docs/intro.html').shape).toBe('a.test:8080/docs/intro.html');
    expect(urlShapeOf('http://a.test')).toEqual({ shape: 'a.test/', family: null });
    expect(urlShapeOf('http://a.test/list?')).toEqual({ shape: 'a.test/list', family: null });
    expect(urlShapeOf('http://a.test/p/7.html#part-2?x=1')).toEqual({ shape: 'a.test/p/{n}.html', family: null });
    expect(urlShapeOf('http://a.test/find?q%5B%5D=a&page=2')).toEqual({ shape: 'a.test/find?page&q[]', family: 'a.test/find?*' });
  });

  it('makes a shape a trap once most of its first pages are the same template again and lead on to new URLs of it', () => {
    let stats: ShapeStats = { pages: 0, same: 0, references: [] };
    // Each day links to the next one, new: the calendar keeps producing URLs of its shape.
    const day = (text: string): void => {
      stats = withPage(withLinks(stats, { newOfShape: 1, knownOfShape: 1, newElsewhere: 0 }), templateHash(text));
    };
    for (let d = 1; d < SHAPE_MIN_PAGES; d++) day(`Events on 2024-06-${d}. No events are scheduled for this day.`);
    expect(isTrapShape(stats)).toBe(false);
    day('Events on 2024-07-01. No events are scheduled for this day.');
    expect(stats).toMatchObject({ pages: SHAPE_MIN_PAGES, same: SHAPE_MIN_PAGES - 1, produced: SHAPE_MIN_PAGES });
    expect(isTrapShape(stats)).toBe(true);
  });

  it('keeps a family of one template whose pages lead to no new URL of it (all listed by an index, as rust-doc lists its intrinsics)', () => {
    const shapes = new UrlShapes();
    for (let lane = 1; lane <= 4 * SHAPE_MIN_PAGES; lane++) {
      const url = `http://a.test/core/arch/fn.vld${lane}q_lane_s${lane}.html`;
      const fanOut = shapes.fanOutOf(url)!;
      fanOut.link('http://a.test/core/arch/index.html', false);
      shapes.recordLinks(fanOut, 0);
      shapes.recordPage(url, `Function core::arch::vld${lane}q_lane_s${lane}. Load multiple single-element structures to one, two, three, or four registers.`, 0);
    }
    expect(shapes.list()).toEqual([]);
  });

  it('refuses URLs of a trap shape or family only on its host, and lists it', () => {
    const shapes = new UrlShapes();
    for (let i = 0; i < SHAPE_MIN_PAGES; i++) {
      const url = `http://a.test/search?color=c${i}&page=${i}`;
      const fanOut = shapes.fanOutOf(url)!;
      fanOut.link(`http://a.test/search?color=c${i + 1}&page=${i + 1}`, true);
      shapes.recordLinks(fanOut, 1000 + i);
      shapes.recordPage(url, 'Search results: twelve products match your filters.', 1000 + i);
    }
    expect(shapes.trapOf('http://a.test/search?size=m')?.shape).toBe('a.test/search?*');
    expect(shapes.trapOf('http://b.test/search?size=m')).toBeNull();
    expect(shapes.trapOf('http://a.test/about.html')).toBeNull();
    expect(shapes.list().map((t) => t.shape)).toEqual(['a.test/search?*', 'a.test/search?color&page']);
  });

  /** A page of `url` whose links are `fresh` (new to the crawl) and `known` ones, as admission reports them. */
  const fetchedPage = (shapes: UrlShapes, url: string, fresh: readonly string[], known: readonly string[] = []): void => {
    const fanOut = shapes.fanOutOf(url);
    if (fanOut === null) return;
    for (const link of fresh) fanOut.link(link, true);
    for (const link of known) fanOut.link(link, false);
    shapes.recordLinks(fanOut, 0);
  };
  const children = (n: number): string[] => [1, 2, 3, 4].map((k) => `http://a.test/stories/${4 * n + k}.html`);

  it('makes a shape a trap by fan-out once a window of its pages led only to new URLs of it', () => {
    const shapes = new UrlShapes();
    for (let n = 1; n < FANOUT_WINDOW; n++) fetchedPage(shapes, `http://a.test/stories/${n}.html`, children(n), ['http://a.test/index.html']);
    expect(shapes.trapOf('http://a.test/stories/99999.html')).toBeNull();
    fetchedPage(shapes, `http://a.test/stories/${FANOUT_WINDOW}.html`, children(FANOUT_WINDOW));
    expect(shapes.trapOf('http://a.test/stories/99999.html')).toMatchObject({ shape: 'a.test/stories/{n}.html', reason: 'fan-out', pages: FANOUT_WINDOW, onwardPages: FANOUT_WINDOW, newOfShape: 4 * FANOUT_WINDOW, newElsewhere: 0 });
    expect(shapes.trapOf('http://a.test/index.html')).toBeNull();
  });

  it('keeps a shape whose pages also link back to pages of it already known (a finite site being discovered)', () => {
    const shapes = new UrlShapes();
    // The test web's hosts: each page links to four new children and to its parent, already known.
    for (let n = 1; n <= 10 * FANOUT_WINDOW; n++) fetchedPage(shapes, `http://a.test/stories/${n}.html`, children(n), [`http://a.test/stories/${Math.floor((n - 1) / 4)}.html`]);
    expect(shapes.list()).toEqual([]);
  });

  it('keeps a shape whose pages lead to new URLs of other shapes as well', () => {
    const shapes = new UrlShapes();
    for (let n = 1; n <= 10 * FANOUT_WINDOW; n++) fetchedPage(shapes, `http://a.test/stories/${n}.html`, [...children(n), `http://a.test/authors/${n}/about.html`]);
    expect(shapes.list()).toEqual([]);
  });

  it('judges each window on its own: a window of pages that link back does not count toward the next', () => {
    const shapes = new UrlShapes();
    const onward = Math.ceil(0.9 * FANOUT_WINDOW);
    // One window just short of the share, then most of the next: no trap, since no single window holds enough.
    for (let n = 1; n <= FANOUT_WINDOW; n++) fetchedPage(shapes, `http://a.test/stories/${n}.html`, children(n), n <= onward - 1 ? [] : ['http://a.test/stories/1.html']);
    for (let n = 1; n < FANOUT_WINDOW; n++) fetchedPage(shapes, `http://a.test/stories/${1000 + n}.html`, children(1000 + n));
    expect(shapes.list()).toEqual([]);
    fetchedPage(shapes, 'http://a.test/stories/2000.html', children(2000));
    expect(shapes.list().map((t) => t.reason)).toEqual(['fan-out']);
  });

  it('counts a faceted family by fan-out when each page adds new parameter combinations', () => {
    const shapes = new UrlShapes();
    for (let n = 1; n <= FANOUT_WINDOW; n++) {
      const shape = n % 2 === 0 ? `http://a.test/find?q=w${n}` : `http://a.test/find?q=w${n}&page=2`;
      fetchedPage(shapes, shape, [`http://a.test/find?q=w${n}a&lang=en`, `http://a.test/find?q=w${n}b&page=3`]);
    }
    expect(shapes.trapOf('http://a.test/find?sort=x')).toMatchObject({ shape: 'a.test/find?*', reason: 'fan-out' });
  });

  // The false-positive check on a real documentation site: Debian's postgresql-doc-15 (1,173 pages),
  // when installed. Every page in file order, as a crawl would meet them: no shape is found a trap.
  it.runIf(existsSync('/usr/share/doc/postgresql-doc-15/html'))('finds no trap among the pages of the PostgreSQL manual', () => {
    const dir = '/usr/share/doc/postgresql-doc-15/html';
    const shapes = new UrlShapes();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.html')).sort()) {
      const url = `http://pg.test/${file}`;
      const excerpt = extractPage(readFileSync(`${dir}/${file}`, 'latin1'), url).page.excerpt;
      if (excerpt.length > 0) shapes.recordPage(url, excerpt, 0);
    }
    expect(shapes.list()).toEqual([]);
  });
});
