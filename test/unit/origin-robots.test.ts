/**
 * An origin's robots.txt attempts (queue-server/robots/origin-robots.ts): an unreachable robots.txt is
 * asked again after the retry wait, and after the last attempt the origin is given up for good in this
 * series, however the politeness delay compares with the retry wait (a longer delay once made the
 * rules expire before the give-up took effect, and robots.txt was asked for ever).
 */
import { describe, expect, it } from 'vitest';
import { OriginRobots } from '../../queue-server/robots/origin-robots.js';
import { robotsVerdict } from '../../queue-server/robots/robots.js';
import { mustNormalize } from '../../shared/url-normalize.js';

const POLICY = { userAgentToken: 'petrel', unreachableRetryMs: 300, attempts: 3 };
const refused = { status: null, errorCode: 'connection-refused', body: null };

describe('robots.txt attempts of an unreachable origin', () => {
  it('waits between attempts, gives up after the last, and then denies its URLs as robots-unreachable', () => {
    const robots = new OriginRobots('http://127.0.0.1:1');
    let now = 0;
    robots.fetchStarted();
    expect(robots.fetched(refused, POLICY, null, now)).toEqual({ retryAt: 300, unreachable: { attempt: 1, givenUp: false } });
    now += 1000; // the politeness delay (1 s) outlasts the retry wait (300 ms)
    expect(robots.needsFetch(now)).toBe(true);
    robots.fetchStarted();
    expect(robots.fetched(refused, POLICY, null, now).unreachable).toEqual({ attempt: 2, givenUp: false });
    now += 1000;
    robots.fetchStarted();
    expect(robots.fetched(refused, POLICY, null, now)).toEqual({ retryAt: null, unreachable: { attempt: 3, givenUp: true } });
    // A second later (past the politeness delay) the origin is still given up: its URLs are denied, not asked again.
    now += 1000;
    expect(robots.needsFetch(now)).toBe(false);
    expect(robotsVerdict(robots.rules!, mustNormalize('http://127.0.0.1:1/'), 'petrel')).toEqual({ allowed: false, code: 'robots-unreachable' });
  });

  it('starts counting again after a robots.txt that answers', () => {
    const robots = new OriginRobots('http://h.example');
    robots.fetched(refused, POLICY, null, 0);
    expect(robots.fetched({ status: 404, errorCode: null, body: null }, POLICY, null, 1000)).toEqual({ retryAt: null, unreachable: null });
    expect(robots.fetched(refused, POLICY, null, 2000).unreachable).toEqual({ attempt: 1, givenUp: false });
  });
});
