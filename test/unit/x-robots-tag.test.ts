import { describe, expect, it } from 'vitest';
import { xRobotsTag } from '../../fetcher/x-robots-tag.js';

describe('X-Robots-Tag', () => {
  it('reads noindex, nofollow, none and noarchive, in any case, across fields', () => {
    expect(xRobotsTag('noindex', 'petrel')).toEqual({ noindex: true, nofollow: false, noarchive: false });
    expect(xRobotsTag('NoFollow', 'petrel')).toEqual({ noindex: false, nofollow: true, noarchive: false });
    // none is noindex and nofollow, not noarchive (a page not indexed has no public cached copy anyway).
    expect(xRobotsTag('none', 'petrel')).toEqual({ noindex: true, nofollow: true, noarchive: false });
    expect(xRobotsTag(['noarchive', 'noindex, nofollow'], 'petrel')).toEqual({ noindex: true, nofollow: true, noarchive: true });
    expect(xRobotsTag('NOARCHIVE', 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: true });
    expect(xRobotsTag(undefined, 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: false });
    expect(xRobotsTag('all, max-snippet: 20, unavailable_after: 2026-01-01', 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: false });
  });

  it('applies directives after a user agent only to that agent, up to the end of the field', () => {
    expect(xRobotsTag('googlebot: noindex, nofollow', 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: false });
    expect(xRobotsTag('Petrel: noindex', 'petrel')).toEqual({ noindex: true, nofollow: false, noarchive: false });
    expect(xRobotsTag(['googlebot: nofollow', 'noindex'], 'petrel')).toEqual({ noindex: true, nofollow: false, noarchive: false });
    expect(xRobotsTag('otherbot: none, petrel: nofollow', 'petrel')).toEqual({ noindex: false, nofollow: true, noarchive: false });
    expect(xRobotsTag('max-snippet: 10, noindex', 'petrel')).toEqual({ noindex: true, nofollow: false, noarchive: false });
    expect(xRobotsTag('googlebot: noarchive', 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: false });
    expect(xRobotsTag('petrel: noarchive', 'petrel')).toEqual({ noindex: false, nofollow: false, noarchive: true });
  });
});
