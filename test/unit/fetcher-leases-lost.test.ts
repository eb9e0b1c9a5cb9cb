import { describe, expect, it } from 'vitest';
import { leasesLost } from '../../fetcher/fetcher.js';

describe('leasesLost: which unknown schedules a fetcher warns about', () => {
  const slotsLeft = new Map([
    ['fetching', 3],
    ['delivering', 0],
  ]);
  const slotsLeftOf = (id: string) => slotsLeft.get(id) ?? 0;

  it('warns about a schedule it still fetches URLs for', () => {
    expect(leasesLost(['fetching'], slotsLeftOf)).toEqual(['fetching']);
  });

  it('says nothing of a schedule whose slots are done (its lease ends when its last results are applied, before their acknowledgement)', () => {
    expect(leasesLost(['delivering'], slotsLeftOf)).toEqual([]);
  });

  it('says nothing of a schedule it no longer holds (delivered while the heartbeat was out)', () => {
    expect(leasesLost(['finished-meanwhile'], slotsLeftOf)).toEqual([]);
  });

  it('keeps the order of the answer among several', () => {
    slotsLeft.set('also-fetching', 1);
    expect(leasesLost(['also-fetching', 'delivering', 'fetching', 'gone'], slotsLeftOf)).toEqual(['also-fetching', 'fetching']);
  });
});
