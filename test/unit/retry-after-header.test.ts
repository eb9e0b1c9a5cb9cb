import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../fetcher/fetch-item.js';

describe('Retry-After as a fetcher reads it (RFC 9110 section 10.2.3)', () => {
  const now = Date.parse('Sun, 06 Nov 1994 08:49:00 GMT');

  it('reads delay-seconds and the three HTTP-date forms, as UTC', () => {
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 5 ', now)).toBe(5000);
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(37_000);
    expect(retryAfterMs('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(37_000);
    // asctime has no zone: it is UTC, not the machine's local time.
    expect(retryAfterMs('Sun Nov  6 08:49:37 1994', now)).toBe(37_000);
    expect(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:29:00 GMT'))).toBe(0);
  });

  it('takes anything else for no header, whatever Date.parse would make of it', () => {
    for (const value of ['-1', '1.5', '+5', '1e3', 'tomorrow', '2025-01-01', 'Sun, 06 Nov 1994 08:49:37 PST', '', '1234567890123']) {
      expect(retryAfterMs(value, now), value).toBeNull();
    }
    expect(retryAfterMs(null, now)).toBeNull();
  });
});
