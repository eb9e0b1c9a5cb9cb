/**
 * The cached copy's document (queue-server/warc/cached-copy.ts `renderCachedCopy`): every value the
 * banner shows is escaped, whatever the capture says; HTML follows the banner as stored, other text is
 * escaped, other types are described, never sent as they are.
 */
import { describe, expect, it } from 'vitest';
import { CACHED_COPY_POLICY, renderCachedCopy, type CachedCopy } from '../../queue-server/warc/cached-copy.js';

const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)>'&`;

function copy(over: Partial<CachedCopy> = {}): CachedCopy {
  return {
    url: `http://127.0.0.2/a?q=${HOSTILE}`,
    fetchedAt: Date.UTC(2026, 11, 3, 12, 0, 0),
    status: 200,
    contentType: 'text/html; charset=utf-8',
    storedBytes: 10,
    truncated: false,
    body: Buffer.from('<p>page</p>'),
    payloadOf: { url: `http://127.0.0.2/b?${HOSTILE}`, fetchedAt: Date.UTC(2026, 11, 2) },
    file: 'petrel-20261203120000000-00001.warc.gz',
    offset: 1234,
    xRobotsTag: [],
    ...over,
  };
}

function banner(html: string): string {
  return html.slice(0, html.indexOf('</div>\n') + 7);
}

describe('a cached copy', () => {
  it('escapes every value of its banner', () => {
    const text = banner(renderCachedCopy(copy({ contentType: `text/html; x=${HOSTILE}` })));
    expect(text).not.toContain('<script');
    expect(text).not.toContain('<img');
    expect(text).not.toContain('"><script');
    expect(text).toContain('&#39;&amp;');
    expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(text).toContain('fetched <time datetime="2026-12-03T12:00:00.000Z">2026-12-03 12:00:00 UTC</time>');
    expect(text).toContain('identical to that of http://127.0.0.2/b?&quot;&gt;&lt;script&gt;');
  });

  it('shows HTML as stored after the banner, escapes other text, describes binary types', () => {
    expect(renderCachedCopy(copy({ payloadOf: null }))).toMatch(/<\/div>\n<p>page<\/p>$/);
    const json = renderCachedCopy(copy({ contentType: 'application/json', body: Buffer.from(`{"a":"${HOSTILE}"}`) }));
    expect(json.slice(json.indexOf('</div>'))).not.toContain('<script');
    const png = renderCachedCopy(copy({ contentType: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47]) }));
    expect(png).toContain('image/png content is not shown here');
    expect(png).not.toContain('\x89PNG');
  });

  it('is served sandboxed: no scripts, no same origin, nothing loaded', () => {
    const directives = CACHED_COPY_POLICY.split(';').map((d) => d.trim());
    expect(directives).toContain('sandbox');
    expect(directives).toContain("default-src 'none'");
    expect(CACHED_COPY_POLICY).not.toMatch(/allow-|script-src|connect-src/);
  });
});
