/**
 * Which record a capture becomes, and where the crawl database's pointer goes afterwards: pure
 * functions of the capture's facts and what is already stored.
 *
 *   capture                                          stored                     record written             crawl db location after
 *   304, no body                                     a location for the URL     revisit server-not-modified  unchanged (the content it
 *                                                                                 refers to that location      refers to still is the page)
 *   304, no body                                     none                       response (the 304 as is)     this capture
 *   2xx, body, not truncated, digest D               D in the digest index      revisit identical-payload-   this capture (a revisit;
 *                                                                                 digest, refers to D's record  its payload is D's)
 *   2xx, body, not truncated, digest D               D not indexed              response; D indexed          this capture
 *   anything else (3xx, 4xx, 5xx, empty, truncated)  -                          response                     this capture
 *
 * WARC 1.1 section 6.7.3: server-not-modified "may be used whenever a subsequent consideration of a URI
 * encounters an assertion from the providing server that the content has not changed, such as an HTTP
 * 304"; section 6.7.2: identical-payload-digest "whenever a subsequent consideration of a URI provides
 * payload content which a strong digest function, such as SHA-1, indicates is identical to a
 * previously recorded version". Only whole, non-empty 2xx payloads take part in deduplication: an empty
 * payload saves nothing, and a truncated one is not the resource.
 *
 * A 304 keeps the pointer on the record that holds the content, so a chain of 304s always refers to
 * that record, never to a revisit. (A 304 after an identical-payload revisit refers to that revisit,
 * whose payload a reader finds by its digest.)
 */
import type { Capture, RevisitTarget } from '../../shared/warc/exchange.js';
import type { CaptureLocation } from './location.js';

/** What the digest index knows of the first stored response with a payload digest. */
export interface DigestEntry {
  /** `sha1:` base32, the whole digest (the index is keyed by 8 bytes of it). */
  readonly digest: string;
  /** WARC-Target-URI of that response. */
  readonly url: string;
  readonly location: CaptureLocation;
}

export type CaptureFacts = Pick<Capture, 'status' | 'payloadDigest' | 'payloadLength' | 'truncated'>;

export type RecordDecision =
  | {
      readonly kind: 'response';
      /** Remember this response as the original of its payload digest. */
      readonly indexDigest: boolean;
    }
  | { readonly kind: 'revisit'; readonly target: RevisitTarget };

/** Whether a capture's payload takes part in deduplication by digest. */
export function dedupable(capture: CaptureFacts): boolean {
  return capture.status >= 200 && capture.status <= 299 && capture.payloadLength > 0 && capture.truncated === null;
}

/**
 * `previous`: the URL's location in the crawl database (null: none); `sameDigest`: the digest index's
 * entry under the capture's digest key (null: none), which may be another digest sharing its 8-byte key.
 */
export function decideRecord(capture: CaptureFacts & { readonly url: string }, known: { readonly previous: CaptureLocation | null; readonly sameDigest: DigestEntry | null }): RecordDecision {
  if (capture.status === 304 && capture.payloadLength === 0 && known.previous !== null) {
    return { kind: 'revisit', target: { profile: 'server-not-modified', recordId: known.previous.recordId, targetUri: capture.url, date: known.previous.date } };
  }
  if (!dedupable(capture)) return { kind: 'response', indexDigest: false };
  const original = known.sameDigest;
  if (original !== null && original.digest === capture.payloadDigest) {
    return { kind: 'revisit', target: { profile: 'identical-payload-digest', recordId: original.location.recordId, targetUri: original.url, date: original.location.date } };
  }
  // A different digest under the same 8-byte key keeps its place: the first one stays the original.
  return { kind: 'response', indexDigest: original === null };
}

/** The crawl database's location for the URL once `written` (this capture) is stored. */
export function locationAfter(decision: RecordDecision, written: CaptureLocation, previous: CaptureLocation | null): CaptureLocation {
  if (decision.kind === 'revisit' && decision.target.profile === 'server-not-modified' && previous !== null) return previous;
  return written;
}
