import { describe, expect, it } from 'vitest';
import { asksToStop, honouredRetryAfter, HOST_FAILURES_IN_ROW, isHostFailure } from '../../shared/fetch-codes.js';
import { afterRequest, HOST_GIVE_UP_FAILURES, HostBackoff, hostBackoffPolicyOf, MAX_HOST_BACKOFF_MS, ONE_SHOT_MAX_WAIT_MS, type HostHealth } from '../../queue-server/frontier/host-backoff.js';

const ORIGIN = 'http://127.0.0.2:8080';
const failure = { failed: true, code: 'timeout' };

function run(failures: number, policy = hostBackoffPolicyOf({ retryBaseMs: 1000, once: true }), now = 0): (HostHealth | null)[] {
  const states: (HostHealth | null)[] = [];
  let health: HostHealth | null = null;
  for (let i = 0; i < failures; i++) states.push((health = afterRequest(health, ORIGIN, failure, now + i, policy)));
  return states;
}

describe('host backoff', () => {
  it('counts timeouts, connection failures, 5xx and 429 against the host, not a Retry-After of a second or more, 4xx or broken responses', () => {
    for (const code of ['timeout', 'connect-timeout', 'connection-refused', 'connection-reset', 'dns-failure', 'network-error']) expect(isHostFailure(null, code, null), code).toBe(true);
    for (const code of ['headers-too-large', 'bad-http-response', 'blocked-address', 'not-requested']) expect(isHostFailure(null, code, null), code).toBe(false);
    expect(isHostFailure(500, null, null)).toBe(true);
    expect(isHostFailure(503, null, null)).toBe(true);
    expect(isHostFailure(429, null, null)).toBe(true);
    expect(isHostFailure(503, null, 1000)).toBe(false);
    expect(isHostFailure(429, null, 30_000)).toBe(false);
    // "Retry-After: 0" or a date already past asks for no wait: an ordinary failure.
    expect(isHostFailure(503, null, 0)).toBe(true);
    expect(isHostFailure(429, null, 999)).toBe(true);
    for (const status of [200, 304, 404, 410]) expect(isHostFailure(status, null, null), String(status)).toBe(false);
    // A 3xx or 4xx with Retry-After is no wait and no failure.
    for (const status of [301, 404]) expect(isHostFailure(status, null, 5000), String(status)).toBe(false);
  });

  it('tells the fetcher to stop asking the host on a 429, or a 5xx with a Retry-After of a second or more', () => {
    expect(asksToStop(429, null)).toBe(true);
    expect(asksToStop(429, 0)).toBe(true);
    expect(asksToStop(503, 2000)).toBe(true);
    expect(asksToStop(500, 1000)).toBe(true);
    expect(asksToStop(503, 0)).toBe(false);
    expect(asksToStop(503, null)).toBe(false);
    for (const status of [200, 301, 304, 404, null]) expect(asksToStop(status, 5000), String(status)).toBe(false);
    expect(honouredRetryAfter(503, 0)).toBeNull();
    expect(honouredRetryAfter(429, 1000)).toBe(1000);
    expect(honouredRetryAfter(301, 1000)).toBeNull();
  });

  it('gives a host up at once in a one-shot crawl when a Retry-After asks for longer than it waits, and says so; never in a continuous one', () => {
    const once = hostBackoffPolicyOf({ retryBaseMs: 1000, once: true });
    const asked = afterRequest(null, ORIGIN, { failed: false, code: 'http-429', waitTooLongMs: 3_600_000 }, 5, once);
    expect(asked).toMatchObject({ gaveUp: true, until: null, code: 'http-429', waitAskedMs: 3_600_000, failuresInRow: 1 });
    // Later answers keep it given up, and keep the reason.
    expect(afterRequest(asked, ORIGIN, { failed: true, code: 'timeout' }, 6, once)).toMatchObject({ gaveUp: true, waitAskedMs: 3_600_000 });
    const continuous = hostBackoffPolicyOf({ retryBaseMs: 1000, once: false });
    expect(afterRequest(null, ORIGIN, { failed: false, code: 'http-429', waitTooLongMs: 3_600_000 }, 5, continuous)).toBeNull();
    // A host given up for failing has no wait asked.
    expect(run(HOST_GIVE_UP_FAILURES).at(-1)).toMatchObject({ gaveUp: true, waitAskedMs: null });
  });

  it('backs a host off from its third failure in a row, doubling the wait each time', () => {
    const states = run(HOST_GIVE_UP_FAILURES - 1);
    expect(states.slice(0, HOST_FAILURES_IN_ROW - 1).map((s) => s?.until)).toEqual([null, null]);
    expect(states.slice(HOST_FAILURES_IN_ROW - 1).map((s) => s!.until! - (s!.failuresInRow - 1))).toEqual([1000, 2000, 4000].slice(0, HOST_GIVE_UP_FAILURES - HOST_FAILURES_IN_ROW));
    expect(states.every((s) => s?.since === 0 && s.code === 'timeout' && !s.gaveUp)).toBe(true);
  });

  it('caps a one-shot wait at a minute and gives the host up at the sixth failure in a row', () => {
    const states = run(HOST_GIVE_UP_FAILURES, hostBackoffPolicyOf({ retryBaseMs: 50_000, once: true }));
    expect(states[HOST_FAILURES_IN_ROW]!.until! - HOST_FAILURES_IN_ROW).toBe(ONE_SHOT_MAX_WAIT_MS);
    expect(states.at(-1)).toMatchObject({ gaveUp: true, until: null, failuresInRow: HOST_GIVE_UP_FAILURES });
  });

  it('never gives a host up in a continuous crawl; its wait grows to an hour', () => {
    const states = run(40, hostBackoffPolicyOf({ retryBaseMs: 30_000, once: false }));
    expect(states.some((s) => s?.gaveUp)).toBe(false);
    expect(states.at(-1)!.until! - 39).toBe(MAX_HOST_BACKOFF_MS);
  });

  it('forgets a host that answers again', () => {
    const [, , third] = run(3);
    expect(afterRequest(third!, ORIGIN, { failed: false, code: '' }, 10, hostBackoffPolicyOf({ retryBaseMs: 1, once: true }))).toBeNull();
  });

  it('shows only hosts backed off or given up, most recent first, with the URLs given up', () => {
    const hosts = new HostBackoff(hostBackoffPolicyOf({ retryBaseMs: 1000, once: true }));
    hosts.record('http://a', failure, 0);
    for (let i = 0; i < HOST_GIVE_UP_FAILURES; i++) hosts.record('http://b', failure, i);
    for (let i = 0; i < HOST_FAILURES_IN_ROW; i++) hosts.record('http://c', { failed: true, code: 'http-503' }, 10 + i);
    expect(hosts.gaveUp('http://b')).toBe(true);
    hosts.countGivenUp('http://b');
    expect(hosts.list().map((h) => [h.origin, h.gaveUp, h.givenUpUrls, h.code])).toEqual([
      ['http://c', false, 0, 'http-503'],
      ['http://b', true, 1, 'timeout'],
    ]);
  });
});
