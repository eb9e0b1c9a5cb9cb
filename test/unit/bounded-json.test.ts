/**
 * The scan that bounds a JSON body's shape before JSON.parse (queue-server/api/bounded-json.ts): it
 * counts exactly the values and keys and the nesting depth JSON.parse would build, ignores brackets
 * and commas inside strings (escaped quotes included), and stops at the first level or token beyond
 * its bounds. The property test compares it with a count over the parsed value (fast-check prints
 * its seed on failure).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkJsonShape, JSON_BOUNDS } from '../../queue-server/api/bounded-json.js';

/** Values and keys, and the depth of arrays and objects, of a parsed value. */
function shapeOf(value: unknown): { tokens: number; depth: number } {
  if (Array.isArray(value)) {
    const inner = value.map(shapeOf);
    return { tokens: 1 + inner.reduce((sum, s) => sum + s.tokens, 0), depth: 1 + Math.max(0, ...inner.map((s) => s.depth)) };
  }
  if (typeof value === 'object' && value !== null) {
    const inner = Object.values(value).map(shapeOf);
    return { tokens: 1 + inner.length + inner.reduce((sum, s) => sum + s.tokens, 0), depth: 1 + Math.max(0, ...inner.map((s) => s.depth)) };
  }
  return { tokens: 1, depth: 0 };
}

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('checkJsonShape', () => {
  it('counts the values and keys and the depth that JSON.parse would build', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const verdict = checkJsonShape(bytes(text), { maxDepth: 100, maxTokens: 1_000_000 });
        expect(verdict).toEqual({ ok: true, ...shapeOf(JSON.parse(text)) });
      }),
      { numRuns: 500 },
    );
  });

  it('ignores brackets, commas, colons and escaped quotes inside strings, in any script', () => {
    const text = JSON.stringify({ 'k[,]': ['[[[', '\\"]]]\\', 'ключ: {,}', '名前"[', '\u2028{'] });
    // The object, its key, the array and its five strings.
    expect(checkJsonShape(bytes(text))).toEqual({ ok: true, tokens: 8, depth: 2 });
  });

  it('refuses nesting deeper than its bound, at the first level beyond it', () => {
    const deep = (levels: number) => bytes(`${'['.repeat(levels)}${']'.repeat(levels)}`);
    expect(checkJsonShape(deep(JSON_BOUNDS.maxDepth))).toMatchObject({ ok: true, depth: JSON_BOUNDS.maxDepth });
    expect(checkJsonShape(deep(JSON_BOUNDS.maxDepth + 1))).toEqual({ ok: false, problem: `JSON nested deeper than ${JSON_BOUNDS.maxDepth} levels` });
    // Unbalanced input is JSON.parse's to refuse; the scan still stops at the bound.
    expect(checkJsonShape(bytes('['.repeat(20_000_000)))).toMatchObject({ ok: false });
  });

  it('refuses more values and keys than its bound', () => {
    const bounds = { maxDepth: 16, maxTokens: 1000 };
    const array = (items: number) => bytes(`[${Array.from({ length: items }, () => '[]').join(',')}]`);
    expect(checkJsonShape(array(999), bounds)).toMatchObject({ ok: true, tokens: 1000 });
    expect(checkJsonShape(array(1000), bounds)).toEqual({ ok: false, problem: 'more than 1000 JSON values and keys' });
    const object = (members: number) => bytes(`{${Array.from({ length: members }, (_, i) => `"k${i}":0`).join(',')}}`);
    expect(checkJsonShape(object(499), bounds)).toMatchObject({ ok: true, tokens: 999 });
    expect(checkJsonShape(object(500), bounds)).toMatchObject({ ok: false });
  });

  it('leaves the protocol\'s largest batch inside the default bounds: 64 results of 5,000 links', () => {
    const result = { slot: 0, i: 0, url: 'http://a.example/', links: Array.from({ length: 5000 }, (_, i) => `http://a.example/${i}`), page: { title: 't', outlinks: 5000 } };
    const post = { protocolVersion: 1, fetcherId: 'f', scheduleId: 's', results: Array.from({ length: 64 }, () => result) };
    const verdict = checkJsonShape(bytes(JSON.stringify(post)));
    expect(verdict).toMatchObject({ ok: true, depth: 4 });
    expect(verdict.ok && verdict.tokens).toBeLessThan(JSON_BOUNDS.maxTokens);
  });
});
