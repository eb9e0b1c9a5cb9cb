/**
 * Which record a capture becomes and where the crawl database's pointer goes (queue-server/warc/revisit.ts):
 * the decision table of its header comment, row by row.
 */
import { describe, expect, it } from 'vitest';
import type { CaptureLocation } from '../../queue-server/warc/location.js';
import { decideRecord, dedupable, locationAfter, type CaptureFacts, type DigestEntry } from '../../queue-server/warc/revisit.js';

const URL_A = 'http://127.0.0.1:9/a';
const D1 = 'sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const D2 = 'sha1:AAAAAAAAAAAAAAAZZZZZZZZZZZZZZZZZ'; // same first 8 bytes as D1, another digest

const previous: CaptureLocation = { file: 'petrel-20260601120000000-00001.warc.gz', offset: 100, length: 900, requestLength: 300, kind: 'response', date: 1_000, recordId: '<urn:uuid:00000000-0000-4000-8000-000000000001>' };
const written: CaptureLocation = { ...previous, offset: 5000, date: 9_000, recordId: '<urn:uuid:00000000-0000-4000-8000-000000000002>' };
const original: DigestEntry = { digest: D1, url: 'http://127.0.0.1:9/original', location: { ...previous, recordId: '<urn:uuid:00000000-0000-4000-8000-000000000003>', date: 500 } };

function facts(fields: Partial<CaptureFacts>): CaptureFacts & { url: string } {
  return { url: URL_A, status: 200, payloadDigest: D1, payloadLength: 10, truncated: null, ...fields };
}

describe('revisit decisions', () => {
  it('makes a bodiless 304 a server-not-modified revisit of the URL’s stored capture, and leaves the pointer there', () => {
    const decision = decideRecord(facts({ status: 304, payloadLength: 0 }), { previous, sameDigest: original });
    expect(decision).toEqual({ kind: 'revisit', target: { profile: 'server-not-modified', recordId: previous.recordId, targetUri: URL_A, date: previous.date } });
    expect(locationAfter(decision, written, previous)).toBe(previous);
  });

  it('stores a 304 as a response when nothing of the URL is archived', () => {
    const decision = decideRecord(facts({ status: 304, payloadLength: 0 }), { previous: null, sameDigest: null });
    expect(decision).toEqual({ kind: 'response', indexDigest: false });
    expect(locationAfter(decision, written, null)).toBe(written);
  });

  it('makes a whole 2xx payload seen before an identical-payload-digest revisit of the first response with it', () => {
    const decision = decideRecord(facts({}), { previous, sameDigest: original });
    expect(decision).toEqual({ kind: 'revisit', target: { profile: 'identical-payload-digest', recordId: original.location.recordId, targetUri: original.url, date: original.location.date } });
    expect(locationAfter(decision, written, previous)).toBe(written);
  });

  it('stores a new 2xx payload as a response and indexes its digest', () => {
    expect(decideRecord(facts({}), { previous, sameDigest: null })).toEqual({ kind: 'response', indexDigest: true });
  });

  it('keeps the first digest when another shares its 8-byte key, storing the second in full', () => {
    expect(decideRecord(facts({ payloadDigest: D2 }), { previous: null, sameDigest: original })).toEqual({ kind: 'response', indexDigest: false });
  });

  it('never deduplicates an empty, truncated or non-2xx payload', () => {
    for (const fields of [{ payloadLength: 0 }, { truncated: 'length' as const }, { status: 404 }, { status: 301 }, { status: 500 }, { status: 304 }]) {
      expect(dedupable(facts(fields)), JSON.stringify(fields)).toBe(false);
      expect(decideRecord(facts(fields), { previous: null, sameDigest: original }), JSON.stringify(fields)).toEqual({ kind: 'response', indexDigest: false });
    }
  });
});
