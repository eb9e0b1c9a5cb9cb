/**
 * The order of a segment's terms (queue-server/search/term-sort.ts) against JavaScript's own sort of
 * the strings: any distinct terms, with shared prefixes, prefixes of one another, non-ASCII letters,
 * surrogate pairs and lone surrogates, come out in UTF-16 code unit order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortedTermIds } from '../../queue-server/search/term-sort.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`term-sort fast-check seed ${seed} (set FC_SEED to replay)`);

function expectSorted(terms: readonly string[]): void {
  const ids = sortedTermIds(terms);
  expect([...ids].sort((a, b) => a - b)).toEqual(terms.map((_, i) => i));
  expect([...ids].map((id) => terms[id])).toEqual([...terms].sort());
}

/** Few distinct code units, so terms share long prefixes and runs of equal units are common. */
const unit = fc.constantFrom('a', 'b', 'z', 'é', '中', '\u{1F600}', '\uD800', '\uFFFF', '\u0000');
const term = fc.array(unit, { minLength: 1, maxLength: 12 }).map((units) => units.join(''));

describe('sortedTermIds', () => {
  it('orders any distinct terms as Array.prototype.sort orders the strings', () => {
    fc.assert(
      fc.property(fc.uniqueArray(term, { maxLength: 400, size: 'max' }), (terms) => expectSorted(terms)),
      { seed, numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }), { maxLength: 300, size: 'max' }), (terms) => expectSorted(terms)),
      { seed, numRuns: 200 },
    );
  });

  it('sorts a commit-sized dictionary, including chains of prefixes and shared stems', () => {
    const terms: string[] = [];
    for (let i = 0; i < 20_000; i++) terms.push(`${(i * 7919) % 20_000}`);
    for (let n = 1; n <= 300; n++) terms.push('x'.repeat(n));
    // A string ends before U+0000 sorts: more of them than an insertion sort's run.
    for (let n = 0; n <= 100; n++) terms.push(`y${'\u0000'.repeat(n)}`, `y${'\u0000'.repeat(n)}y`);
    for (let i = 0; i < 500; i++) terms.push(`internationali${String.fromCharCode(97 + (i % 26))}${i}`);
    expectSorted(terms);
    expect(sortedTermIds([])).toEqual(new Int32Array(0));
    expectSorted(['only']);
  });
});
