import { describe, expect, it } from 'vitest';
import { applyUrlRules } from '../../queue-server/admission/url-rules.js';
import { mustNormalize } from '../../shared/url-normalize.js';

const rule = (href: string) => applyUrlRules(mustNormalize(href));

describe('crawl rules for discovered URLs', () => {
  it('removes session-id query parameters and keeps the rest in order', () => {
    expect(rule('http://h.example/p?a=1&PHPSESSID=abc&b=2&sid=9')).toEqual({ ok: true, url: 'http://h.example/p?a=1&b=2' });
    expect(rule('http://h.example/p?jsessionid=1')).toEqual({ ok: true, url: 'http://h.example/p' });
    expect(rule('http://h.example/p?aspsessionidqwer=1&x')).toEqual({ ok: true, url: 'http://h.example/p?x' });
  });

  it('removes a ;jsessionid= path parameter', () => {
    expect(rule('http://h.example/shop/item;jsessionid=0123ABC?id=7')).toEqual({ ok: true, url: 'http://h.example/shop/item?id=7' });
  });

  it('makes 10,000 links that differ only by a session id one URL', () => {
    const urls = new Set(Array.from({ length: 10_000 }, (_, i) => {
      const result = rule(`http://h.example/list?page=2&sessionid=${i}`);
      return result.ok ? result.url : result.code;
    }));
    expect([...urls]).toEqual(['http://h.example/list?page=2']);
  });

  it('refuses a path that repeats a segment more than three times (/a/a/a/a)', () => {
    expect(rule('http://h.example/a/a/a/x')).toEqual({ ok: true, url: 'http://h.example/a/a/a/x' });
    expect(rule('http://h.example/a/a/a/a/x')).toEqual({ ok: false, code: 'trap-repeated-segment' });
    expect(rule('http://h.example/x/y/x/y/x/y/x/y')).toEqual({ ok: false, code: 'trap-repeated-segment' });
  });

  it('refuses a path deeper than 32 segments', () => {
    const deep = Array.from({ length: 33 }, (_, i) => `s${i}`).join('/');
    expect(rule(`http://h.example/${deep}`)).toEqual({ ok: false, code: 'trap-deep-path' });
    expect(rule(`http://h.example/${deep.split('/').slice(0, 32).join('/')}`).ok).toBe(true);
  });

  it('leaves ordinary URLs alone', () => {
    for (const href of ['http://h.example/', 'http://h.example/docs/a.html?q=sid-like&side=1', 'https://h.example:8443/a/b/c?x=1&y=2']) {
      expect(rule(href)).toEqual({ ok: true, url: mustNormalize(href) });
    }
  });
});
