/**
 * WARC file names and their (time, serial) ids convert both ways, and the one-entry memo behind the
 * conversions (queue-server/warc/location.ts) never answers for a name or id it was not given: any
 * sequence of conversions gives what converting each one afresh gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseWarcFileName, warcFileName, type WarcFileId } from '../../queue-server/warc/location.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`warc-location fast-check seed ${seed} (set FC_SEED to replay)`);

/** The name, computed here without the module. */
function nameOf(id: WarcFileId): string {
  const stamp = new Date(id.createdAt).toISOString().replace(/[-:T.Z]/g, '');
  return `petrel-${stamp}-${String(id.serial).padStart(5, '0')}.warc.gz`;
}

/** Mostly from a few times and serials, so that calls share one and differ in the other (what a memo can get wrong). */
const ids = fc.oneof(
  fc.record({ createdAt: fc.constantFrom(Date.UTC(2026, 11, 7), Date.UTC(2026, 11, 7, 0, 0, 0, 1), Date.UTC(2031, 0, 1)), serial: fc.constantFrom(0, 1, 12_345, 0xffffffff) }),
  fc.record({ createdAt: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2200, 0, 1) }), serial: fc.integer({ min: 0, max: 0xffffffff }) }),
);

describe('WARC file names', () => {
  it('convert both ways through any sequence of calls, and only the written spelling parses', () => {
    type Step = { kind: 'name'; id: WarcFileId } | { kind: 'parse'; id: WarcFileId; spelling: 'canonical' | 'zero-padded' | 'other prefix' | 'bad date' };
    const steps = fc.array(
      fc.oneof(
        ids.map((id): Step => ({ kind: 'name', id })),
        fc.tuple(ids, fc.constantFrom('canonical', 'zero-padded', 'other prefix', 'bad date') as fc.Arbitrary<'canonical' | 'zero-padded' | 'other prefix' | 'bad date'>).map(([id, spelling]): Step => ({ kind: 'parse', id, spelling })),
      ),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(steps, fc.boolean(), (sequence, repeat) => {
        // Repeating each step exercises the memo's answers; the first of each computes.
        for (const step of sequence.flatMap((s) => (repeat ? [s, s] : [s]))) {
          const name = nameOf(step.id);
          if (step.kind === 'name') {
            expect(warcFileName(step.id)).toBe(name);
            continue;
          }
          const spelled =
            step.spelling === 'canonical' ? name
            : step.spelling === 'zero-padded' ? name.replace(/-(\d+)\.warc\.gz$/, (_, serial: string) => `-0${serial}.warc.gz`)
            : step.spelling === 'other prefix' ? `other${name.slice('petrel'.length)}`
            : name.replace(/^petrel-(\d{4})\d{2}/, 'petrel-$113');
          const parsed = parseWarcFileName(spelled);
          if (step.spelling === 'canonical') expect(parsed).toEqual(step.id);
          // Zero-padding a serial of fewer than 10 digits is another spelling of the same file: refused.
          else expect(parsed).toBeNull();
        }
      }),
      { seed, numRuns: 300 },
    );
  });
});
