import { describe, expect, it } from 'vitest';
import { Frontier } from '../../queue-server/frontier/frontier.js';
import { canonicalAddress, PolitenessGroups } from '../../queue-server/frontier/politeness-group.js';
import { urlHash } from '../../shared/url-hash.js';
import { mustNormalize } from '../../shared/url-normalize.js';

/** A frontier of three origins with one queued URL each, at concurrency 1. */
function threeOrigins() {
  const frontier = new Frontier({ concurrencyOf: () => 1 });
  const origins = ['http://a.test', 'http://b.test', 'http://c.test'];
  for (const origin of origins) {
    const url = mustNormalize(`${origin}/x.html`);
    frontier.add(origin, url, urlHash(url), 0, 0);
  }
  return { frontier, queues: origins.map((origin) => frontier.origin(origin)) };
}

describe('origins on one address share one politeness queue', () => {
  it('gives no origin of the address a slot while another has one out, and all of them one after it ends', () => {
    const { frontier, queues } = threeOrigins();
    const groups = new PolitenessGroups();
    for (const queue of queues) groups.learned(queue, '127.0.0.9', 0);
    const first = frontier.popEligible(0)!;
    first.startSlot();
    frontier.reconsider(first, 0);
    expect(queues.map((queue) => queue.slotsOut)).toEqual([1, 1, 1]);
    // The others were filed before the slot started: the cutter skips them (slotsOut at the limit), and
    // re-filed they are not eligible.
    for (let queue = frontier.popEligible(0); queue !== undefined; queue = frontier.popEligible(0)) frontier.reconsider(queue, 0);
    expect(frontier.popEligible(0)).toBeUndefined();
    // The slot ends with a rest of 500 ms: every origin of the address waits for it.
    first.finishSlot(100, 600);
    expect(queues.map((queue) => queue.nextStartAt)).toEqual([600, 600, 600]);
    expect(frontier.popEligible(599)).toBeUndefined();
    expect(frontier.nextWakeAt(100)).toBe(600);
    expect(frontier.popEligible(600)).toBeDefined();
  });

  it('leaves origins on other addresses alone, and moves an origin whose address changed', () => {
    const { queues } = threeOrigins();
    const [a, b, c] = queues as [typeof queues[0], typeof queues[0], typeof queues[0]];
    const groups = new PolitenessGroups();
    groups.learned(a, '127.0.0.9', 0);
    groups.learned(b, '127.0.0.9', 0);
    groups.learned(c, '127.0.0.10', 0);
    a.startSlot();
    expect([a.slotsOut, b.slotsOut, c.slotsOut]).toEqual([1, 1, 0]);
    groups.learned(a, '::ffff:127.0.0.10', 0);
    expect([a.slotsOut, b.slotsOut, c.slotsOut]).toEqual([1, 0, 1]);
    a.finishSlot(0, 0);
    expect([a.slotsOut, b.slotsOut, c.slotsOut]).toEqual([0, 0, 0]);
    expect(groups.sharedAddresses).toBe(1);
  });

  it('spells an address one way', () => {
    expect(canonicalAddress('::FFFF:127.0.0.9')).toBe('127.0.0.9');
    expect(canonicalAddress('fe80::1%eth0')).toBe('fe80::1');
    expect(canonicalAddress('example.com')).toBeNull();
  });
});
