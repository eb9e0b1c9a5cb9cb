/**
 * URL normalization (shared/url-normalize.ts): one test group per numbered rule of the module header,
 * then properties over generated URLs: normalizing twice changes nothing, the output obeys every rule,
 * and `originOf` / `pathAndQuery` split a normalized URL into parts that reassemble it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_URL_LENGTH,
  hostnameOf,
  mustNormalize,
  normalizeUrl,
  originOf,
  pathAndQuery,
  type NormalizeResult,
  type NormalizedUrl,
} from '../../shared/url-normalize.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`url-normalize fast-check seed ${seed} (set FC_SEED to replay)`);

function ok(href: string, base?: string | URL): { url: NormalizedUrl; origin: string } {
  const result = normalizeUrl(href, base);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(href)} to normalize, got code ${result.code}`);
  return result;
}

function codeOf(result: NormalizeResult): string | null {
  return result.ok ? null : result.code;
}

describe('rule 1: WHATWG parsing', () => {
  it('lowercases the scheme and the host but not the path', () => {
    expect(ok('HTTP://Example.COM/Some/PATH').url).toBe('http://example.com/Some/PATH');
    expect(ok('HtTpS://WWW.EXAMPLE.ORG').origin).toBe('https://www.example.org');
  });

  it('removes the default port of each scheme and keeps every other port', () => {
    expect(ok('http://example.com:80/a').url).toBe('http://example.com/a');
    expect(ok('https://example.com:443/a').url).toBe('https://example.com/a');
    expect(ok('https://example.com:80/a').url).toBe('https://example.com:80/a');
    expect(ok('http://example.com:443/a').url).toBe('http://example.com:443/a');
    expect(ok('http://example.com:8080/a').origin).toBe('http://example.com:8080');
  });

  it('turns an empty path into /', () => {
    expect(ok('http://example.com').url).toBe('http://example.com/');
    expect(ok('http://example.com?q=1').url).toBe('http://example.com/?q=1');
  });

  it('resolves . and .. segments, including escaped dots', () => {
    expect(ok('http://example.com/a/./b/../c').url).toBe('http://example.com/a/c');
    expect(ok('http://example.com/a/b/../../../../c').url).toBe('http://example.com/c');
    expect(ok('http://example.com/a/%2e%2E/b').url).toBe('http://example.com/b');
    expect(ok('http://example.com/a/%2E/b').url).toBe('http://example.com/a/b');
  });

  it('resolves a relative reference against the base, including ../', () => {
    const base = 'http://example.com/a/b/c.html?x=1';
    expect(ok('d.html', base).url).toBe('http://example.com/a/b/d.html');
    expect(ok('../d.html', base).url).toBe('http://example.com/a/d.html');
    expect(ok('../../../../d.html', base).url).toBe('http://example.com/d.html');
    expect(ok('/root', base).url).toBe('http://example.com/root');
    expect(ok('?y=2', base).url).toBe('http://example.com/a/b/c.html?y=2');
    expect(ok('#section', base).url).toBe('http://example.com/a/b/c.html?x=1');
    expect(ok('', base).url).toBe('http://example.com/a/b/c.html?x=1');
    expect(ok('d.html', new URL(base)).url).toBe('http://example.com/a/b/d.html');
  });

  it('resolves a protocol-relative reference with the scheme of the base', () => {
    expect(ok('//Other.EXAMPLE/x', 'https://example.com/a').url).toBe('https://other.example/x');
    expect(ok('//other.example:8443/x', 'http://example.com/').origin).toBe('http://other.example:8443');
  });

  it('ignores the base for an absolute URL', () => {
    expect(ok('https://b.example/x', 'http://a.example/y/').url).toBe('https://b.example/x');
  });

  it('converts an internationalized host name to punycode', () => {
    const result = ok('http://Bücher.example/straße');
    expect(result.origin).toBe('http://xn--bcher-kva.example');
    expect(result.url).toBe('http://xn--bcher-kva.example/stra%C3%9Fe');
    expect(ok('http://xn--bcher-kva.example/').url).toBe('http://xn--bcher-kva.example/');
  });

  it('keeps an IPv6 host in brackets, compressed and lowercase', () => {
    expect(ok('http://[2001:DB8:0:0:0:0:0:1]:8080/x').url).toBe('http://[2001:db8::1]:8080/x');
    expect(ok('http://[::1]/').origin).toBe('http://[::1]');
    expect(ok('https://[::1]:443/').url).toBe('https://[::1]/');
  });

  it('writes an IPv4 host in dotted decimal', () => {
    expect(ok('http://0x7f.1/').url).toBe('http://127.0.0.1/');
  });

  it('percent-encodes characters that may not appear raw', () => {
    expect(ok('http://example.com/a b/é').url).toBe('http://example.com/a%20b/%C3%A9');
    expect(ok('http://example.com/?q=a b').url).toBe('http://example.com/?q=a%20b');
  });

  it('rejects what is not a URL with invalid-url', () => {
    expect(codeOf(normalizeUrl('not a url'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl(''))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('http://'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('http://exa mple.com/'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('http://[::1/'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('http://example.com:99999/'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('/relative/without/base'))).toBe('invalid-url');
    expect(codeOf(normalizeUrl('x', 'not a base'))).toBe('invalid-url');
  });
});

describe('rule 2: only http and https are crawlable', () => {
  it.each(['javascript:alert(1)', 'JavaScript:void(0)', 'mailto:someone@example.com', 'data:text/html,<p>x</p>', 'ftp://example.com/file', 'file:///etc/passwd', 'ws://example.com/', 'tel:+15555555'])(
    'rejects %s with unsupported-scheme',
    (href) => {
      expect(codeOf(normalizeUrl(href))).toBe('unsupported-scheme');
      expect(codeOf(normalizeUrl(href, 'http://example.com/page'))).toBe('unsupported-scheme');
    },
  );
});

describe('rule 3: credentials are removed', () => {
  it('drops user name and password', () => {
    expect(ok('http://user:secret@example.com/x').url).toBe('http://example.com/x');
    expect(ok('https://user@example.com:8443/').url).toBe('https://example.com:8443/');
    expect(ok('http://user:secret@example.com/x').origin).toBe('http://example.com');
  });
});

describe('rule 4: the fragment is dropped', () => {
  it('removes the fragment after the path and after the query', () => {
    expect(ok('http://example.com/a#top').url).toBe('http://example.com/a');
    expect(ok('http://example.com/a?q=1#top').url).toBe('http://example.com/a?q=1');
    expect(ok('http://example.com/a#').url).toBe('http://example.com/a');
  });
});

describe('rule 5: uniform percent-encoding', () => {
  it('decodes escapes of unreserved characters', () => {
    expect(ok('http://example.com/%7Euser').url).toBe('http://example.com/~user');
    expect(ok('http://example.com/%41%62%2D%2E%5F%7e%30').url).toBe('http://example.com/Ab-._~0');
    expect(ok('http://example.com/?q=%41%7E').url).toBe('http://example.com/?q=A~');
  });

  it('writes every other escape with uppercase hex digits', () => {
    expect(ok('http://example.com/a%2fb').url).toBe('http://example.com/a%2Fb');
    expect(ok('http://example.com/%c3%a9').url).toBe('http://example.com/%C3%A9');
    expect(ok('http://example.com/?q=%2f%3d%26').url).toBe('http://example.com/?q=%2F%3D%26');
  });

  it('keeps reserved characters escaped, so the meaning never changes', () => {
    for (const escape of ['%2F', '%3F', '%23', '%26', '%3D', '%3A', '%40', '%25', '%2B', '%20']) {
      expect(ok(`http://example.com/a${escape}b?k=v${escape}w`).url).toBe(`http://example.com/a${escape}b?k=v${escape}w`);
    }
  });

  it('makes two spellings of one resource equal', () => {
    expect(ok('HTTP://Example.com:80/%7efoo/./%62ar?x=%2f#frag').url).toBe(ok('http://example.com/~foo/bar?x=%2F').url);
  });
});

describe('rule 6: the query', () => {
  it('removes an empty query', () => {
    expect(ok('http://example.com/a?').url).toBe('http://example.com/a');
    expect(ok('http://example.com/?#frag').url).toBe('http://example.com/');
  });

  it('keeps a non-empty query in its order', () => {
    expect(ok('http://example.com/a?b=2&a=1').url).toBe('http://example.com/a?b=2&a=1');
    expect(ok('http://example.com/a??').url).toBe('http://example.com/a??');
    expect(ok('http://example.com/a?=').url).toBe('http://example.com/a?=');
  });
});

describe('rule 7: length limits', () => {
  const prefix = 'http://example.com/';

  it('accepts a URL of exactly maxLength characters and rejects one more', () => {
    const exact = prefix + 'a'.repeat(DEFAULT_MAX_URL_LENGTH - prefix.length);
    expect(exact.length).toBe(DEFAULT_MAX_URL_LENGTH);
    expect(ok(exact).url).toBe(exact);
    expect(codeOf(normalizeUrl(`${exact}b`))).toBe('url-too-long');
  });

  it('measures the length after normalization', () => {
    // 700 raw `é` are 700 characters of input but 4,200 once percent-encoded.
    expect(codeOf(normalizeUrl(prefix + 'é'.repeat(700)))).toBe('url-too-long');
    // Dot segments make the input long and the result short.
    expect(ok(prefix + 'x/../'.repeat(300) + 'end').url).toBe(`${prefix}end`);
  });

  it('rejects input longer than four times maxLength before parsing', () => {
    const input = prefix + 'x/../'.repeat(2000) + 'end';
    expect(input.length).toBeGreaterThan(DEFAULT_MAX_URL_LENGTH * 4);
    expect(codeOf(normalizeUrl(input))).toBe('url-too-long');
  });

  it('honours a caller-supplied maxLength', () => {
    expect(codeOf(normalizeUrl('http://example.com/abcdef', undefined, 20))).toBe('url-too-long');
    expect(ok('http://example.com/abc').url).toBe('http://example.com/abc');
    expect(normalizeUrl('http://example.com/a', undefined, 20).ok).toBe(true);
  });
});

describe('mustNormalize', () => {
  it('returns the normalized URL', () => {
    expect(mustNormalize('HTTP://EXAMPLE.com:80/%7e')).toBe('http://example.com/~');
  });

  it('throws with the rejection code in the message', () => {
    expect(() => mustNormalize('mailto:x@example.com')).toThrow(/unsupported-scheme/);
    expect(() => mustNormalize('::')).toThrow(/invalid-url/);
  });
});

describe('originOf and pathAndQuery', () => {
  it('split a normalized URL at the start of its path', () => {
    const url = mustNormalize('https://user:pw@[::1]:8443/a/b?c=d/e#f');
    expect(originOf(url)).toBe('https://[::1]:8443');
    expect(pathAndQuery(url)).toBe('/a/b?c=d/e');
    expect(pathAndQuery(mustNormalize('http://example.com'))).toBe('/');
  });
});

// ----- properties over generated URLs -----

const hexDigit = fc.constantFrom(...'0123456789abcdefABCDEF');
/** Escapes are always well formed: `%` and two hex digits in either case. */
const escape = fc.tuple(hexDigit, hexDigit).map(([a, b]) => `%${a}${b}`);
const unreservedEscape = fc.constantFrom(...'AZaz09-._~').map((c) => `%${c.charCodeAt(0).toString(16)}`);
const pathChar = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...'abcXYZ019-._~') },
  { weight: 2, arbitrary: fc.constantFrom(...":@!$&'()*+,;=") },
  { weight: 2, arbitrary: escape },
  { weight: 2, arbitrary: unreservedEscape },
  { weight: 1, arbitrary: fc.constantFrom(' ', 'é', '日', '"', '<', '>', '`', '{', '}', '|', '^', '\\', '[', ']', '\t') },
);
const segment = fc.oneof(
  { weight: 8, arbitrary: fc.array(pathChar, { maxLength: 8 }).map((chars) => chars.join('')) },
  { weight: 1, arbitrary: fc.constantFrom('.', '..', '%2e', '%2E%2e', '.%2e') },
);
const queryChar = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...'abcXYZ019-._~=&') },
  { weight: 2, arbitrary: fc.constantFrom(...":@!$'()*+,;/?") },
  { weight: 2, arbitrary: escape },
  { weight: 2, arbitrary: unreservedEscape },
  { weight: 1, arbitrary: fc.constantFrom(' ', 'é', '"', '<', '>', '`', '{', '}', '|', '^', '[', ']') },
);
const host = fc.constantFrom(
  'example.com',
  'EXAMPLE.com',
  'www.Example.org',
  'bücher.example',
  'xn--bcher-kva.example',
  '127.0.0.1',
  '[::1]',
  '[2001:DB8::A]',
  'localhost',
  'a-b.c-d.example',
);
const urlArb = fc
  .record({
    scheme: fc.constantFrom('http', 'https', 'HTTP', 'Https'),
    userinfo: fc.constantFrom('', 'user@', 'user:pw@'),
    host,
    port: fc.constantFrom('', ':80', ':443', ':8080', ':1'),
    segments: fc.array(segment, { maxLength: 6 }),
    query: fc.option(fc.array(queryChar, { maxLength: 12 }).map((chars) => chars.join('')), { nil: undefined }),
    fragment: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
  })
  .map(
    ({ scheme, userinfo, host, port, segments, query, fragment }) =>
      `${scheme}://${userinfo}${host}${port}/${segments.join('/')}${query === undefined ? '' : `?${query}`}${fragment === undefined ? '' : `#${fragment}`}`,
  );

/** A relative reference (resolved against a generated base). */
const relativeArb = fc
  .record({
    ups: fc.integer({ min: 0, max: 4 }),
    segments: fc.array(segment, { maxLength: 4 }),
    query: fc.option(fc.array(queryChar, { maxLength: 6 }).map((chars) => chars.join('')), { nil: undefined }),
  })
  .map(({ ups, segments, query }) => `${ups === 0 ? './' : '../'.repeat(ups)}${segments.join('/')}${query === undefined ? '' : `?${query}`}`);

function checkNormalForm(url: NormalizedUrl, origin: string): void {
  expect(url).not.toContain('#');
  if (url.includes('?')) expect(url.indexOf('?')).toBeLessThan(url.length - 1);
  expect(origin).not.toContain('@');
  expect(url.length).toBeLessThanOrEqual(DEFAULT_MAX_URL_LENGTH);
  for (const [, hex] of url.matchAll(/%([0-9A-Fa-f]{2})/g)) {
    expect(hex).toBe(hex!.toUpperCase());
    expect(String.fromCharCode(parseInt(hex!, 16))).not.toMatch(/[A-Za-z0-9\-._~]/);
  }
  expect(originOf(url)).toBe(origin);
  expect(pathAndQuery(url).startsWith('/')).toBe(true);
  expect(originOf(url) + pathAndQuery(url)).toBe(url);
}

describe('properties', () => {
  it('normalizing a normalized URL changes nothing, and the parts reassemble it', () => {
    fc.assert(
      fc.property(urlArb, (href) => {
        const first = normalizeUrl(href);
        if (!first.ok) return;
        checkNormalForm(first.url, first.origin);
        const second = normalizeUrl(first.url);
        expect(second).toEqual(first);
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('a resolved relative reference is in normal form and stable', () => {
    fc.assert(
      fc.property(urlArb, relativeArb, (base, relative) => {
        const baseResult = normalizeUrl(base);
        if (!baseResult.ok) return;
        const resolved = normalizeUrl(relative, baseResult.url);
        if (!resolved.ok) return;
        expect(resolved.origin).toBe(baseResult.origin);
        checkNormalForm(resolved.url, resolved.origin);
        expect(normalizeUrl(resolved.url)).toEqual(resolved);
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('every generated http(s) URL with a valid host normalizes', () => {
    fc.assert(
      fc.property(urlArb, (href) => {
        expect(normalizeUrl(href).ok).toBe(true);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('hostnameOf reads the host name off a normalized URL and off its origin as the WHATWG parser gives it', () => {
    fc.assert(
      fc.property(urlArb, (href) => {
        const { url, origin } = ok(href);
        const expected = new URL(url).hostname;
        expect(hostnameOf(url)).toBe(expected);
        expect(hostnameOf(origin)).toBe(expected);
      }),
      { seed, numRuns: 1000 },
    );
    expect(hostnameOf(mustNormalize('http://[2001:db8::a]:8080/a:b/c'))).toBe('[2001:db8::a]');
    expect(hostnameOf(mustNormalize('https://user:pw@Example.org:8443?q=a:b'))).toBe('example.org');
  });
});

describe('stray percent signs', () => {
  it('escapes a % that starts no escape, so normalizing twice changes nothing', () => {
    const once = normalizeUrl('http://a/%%34%31?q=%%32%46');
    expect(once.ok && once.url).toBe('http://a/%2541?q=%252F');
    const twice = once.ok ? normalizeUrl(once.url) : once;
    expect(twice.ok && twice.url).toBe(once.ok && once.url);
  });
});

