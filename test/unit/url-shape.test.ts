import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractPage } from '../../fetcher/html-extract.js';
import { isTrapShape, SHAPE_MIN_PAGES, templateHash, urlShapeOf, UrlShapes, withPage, type ShapeStats } from '../../queue-server/admission/url-shape.js';

describe('URL shapes', () => {
  it('abstracts numbers, dates and ids in the path and keeps the sorted parameter names', () => {
    expect(urlShapeOf('http://a.test/events/2024/06/15')).toEqual({ shape: 'a.test/events/{n}/{n}/{n}', family: null });
    expect(urlShapeOf('http://a.test/section-3/page-12.html').shape).toBe('a.test/section-{n}/page-{n}.html');
    expect(urlShapeOf('http://a.test/item/3f2a9c1e7b6d/view').shape).toBe('a.test/item/{id}/view');
    expect(urlShapeOf('http://a.test/search?size=m&color=red&size=l')).toEqual({ shape: 'a.test/search?color&size', family: 'a.test/search?*' });
    expect(urlShapeOf('http://a.test:8080/docs/intro.html').shape).toBe('a.test:8080/docs/intro.html');
  });

  it('makes a shape a trap once most of its first pages are the same template again', () => {
    let stats: ShapeStats = { pages: 0, same: 0, references: [] };
    for (let day = 1; day < SHAPE_MIN_PAGES; day++) stats = withPage(stats, templateHash(`Events on 2024-06-${day}. No events are scheduled for this day.`));
    expect(isTrapShape(stats)).toBe(false);
    stats = withPage(stats, templateHash('Events on 2024-07-01. No events are scheduled for this day.'));
    expect(stats).toMatchObject({ pages: SHAPE_MIN_PAGES, same: SHAPE_MIN_PAGES - 1 });
    expect(isTrapShape(stats)).toBe(true);
  });

  it('refuses URLs of a trap shape or family only on its host, and lists it', () => {
    const shapes = new UrlShapes();
    for (let i = 0; i < SHAPE_MIN_PAGES; i++) shapes.recordPage(`http://a.test/search?color=c${i}&page=${i}`, 'Search results: twelve products match your filters.', 1000 + i);
    expect(shapes.trapOf('http://a.test/search?size=m')?.shape).toBe('a.test/search?*');
    expect(shapes.trapOf('http://b.test/search?size=m')).toBeNull();
    expect(shapes.trapOf('http://a.test/about.html')).toBeNull();
    expect(shapes.list().map((t) => t.shape)).toEqual(['a.test/search?*', 'a.test/search?color&page']);
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
