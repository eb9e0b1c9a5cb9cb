/**
 * Every change a fetch makes to a crawl database record, in one pure function (Nutch's
 * CrawlDbReducer.reduce, applied per result as it arrives instead of per updatedb job). The caller
 * classifies the fetch result into a FetchOutcome, looks up duplicates (SignatureIndex,
 * NearDuplicateIndex) and the canonical URL's hash, and stores the record returned.
 *
 * Resulting status, by outcome (and old status where it matters):
 *
 *   outcome                                   old status          new status     modified  interval      next fetch at
 *   ----------------------------------------  ------------------  -------------  --------  ------------  -------------------------------
 *   success, canonicalOf or duplicateOf set   any                 duplicate      cmp       kept          max(now + interval, freshUntil)
 *   success, signature = stored one           a page's (***)      notmodified    false     adapt(false)  max(now + interval', freshUntil)
 *   success, signature = stored one           duplicate (****)    fetched (**)   false     adapt(false)  max(now + interval', freshUntil)
 *   success, signature != stored one          a page's (***)      fetched        true      adapt(true)   max(now + interval', freshUntil)
 *   success, nothing to compare (*)           any                 fetched        null      kept          max(now + interval, freshUntil)
 *   not-modified (304)                        duplicate (****)    duplicate      false     kept          max(now + interval, freshUntil)
 *   not-modified (304)                        any other           notmodified    false     adapt(false)  max(now + interval', freshUntil)
 *   redirect 301, 308                         any                 redir_perm     null      kept          now + interval
 *   redirect 302, 303, 307                    any                 redir_temp     null      kept          now + interval
 *   gone 404, 410                             any                 gone           null      kept          now + goneRecheckMs
 *   denied (other 4xx: 401, 403, ...)         any                 gone           null      kept          now + goneRecheckMs
 *   broken response, blocked-address          any                 gone           null      kept          now + goneRecheckMs
 *   transient with retryAfterMs (429/503)     any                 retry          null      kept          now + retryAfterMs
 *   transient, retries + 1 <= maxRetries      any                 retry          null      kept          now + retryBaseMs * 2^(retries'-1)
 *   transient, retries + 1 > maxRetries       any                 gone           null      kept          now + goneRecheckMs (+)
 *   transient with giveUp (requests used up)  any                 gone           null      kept          now + goneRecheckMs (+)
 *   given-up (its host kept failing)          any                 gone           null      kept          now + min(goneRecheckMs, 1 day)
 *   robots-denied, robots-disallowed          any                 robots_denied  null      kept          now + goneRecheckMs
 *   robots-denied, robots-unreachable         any                 robots_denied  null      kept          now + min(goneRecheckMs, 1 day)
 *   (given-up, like robots-denied, sends no request: fetch times, status code and retries are kept.)
 *
 *   (+) min(goneRecheckMs, 1 day) after a connection failure (no answer: timeout, refused, DNS, ...).
 *   (*) no stored signature, no new signature, or an old status that holds no page (gone, redir_perm,
 *       redir_temp, robots_denied: the search index dropped the URL): a page that was gone, moved away or
 *       denied and answers again is new content (fetched), even with the body it had before.
 *   (***) fetched, notmodified, retry (not of a duplicate) or unfetched with a stored signature.
 *   (****) or a retry of a duplicate: a retry keeps duplicateOf (the only status besides duplicate that
 *       has one), so a copy whose refetch failed once and then answered 304 stays the copy it was. It
 *       became notmodified, an original in the duplicate indexes, while the search index kept it a copy.
 *   (**) a copy whose original went is an original now: new to the search index (index-change.ts
 *       indexes a fetched page, not a notmodified one), though its body is the one it had.
 *   cmp: true, false or null exactly as the three success rows below it would say.
 *   adapt(m): adaptInterval(interval, m) (+40 % unchanged, -20 % changed, clamped); interval' is the result.
 *   retries': the retries after this failure (old retries + 1). Both waits of a transient failure are
 *       capped at maxIntervalMs (only a policy with many retries, or a Retry-After of months, reaches it).
 *   canonicalOf wins over duplicateOf when both are set: the site's own statement beats our guess.
 *
 * Other fields, by outcome:
 *
 *   field              success (fetched, notmodified, duplicate)   304        redirect  gone, denied  transient                 robots-denied
 *   -----------------  ------------------------------------------  ---------  --------  ------------  ------------------------  -------------
 *   retries            0                                           0          0         0             +1, at most maxRetries+1  0
 *                                                                                                     (unchanged with Retry-After)
 *   firstFetchAt       now if null                                 same       same      same          same                      kept
 *   lastFetchAt        now                                         now        now       now           now                       kept
 *   lastHttpStatus     status                                      304        status    status        status (null: no answer)  kept
 *   errorCode          null                                        null       null      http-NNN      code                      its code (**)
 *   modifiedAt         now, kept when modified is false            kept       kept      kept          kept                      kept
 *   signature, simhash the new ones                                kept       kept      kept          kept                      kept
 *   duplicateOf        the target when duplicate, else null        kept if    null      null          kept by a retry,          null
 *                                                                  it has                           null when gone
 *   redirectTo         null                                        null       target    null          null                      null
 *
 *   (**) robots-disallowed (robots.txt forbids the URL) or robots-unreachable (robots.txt could not be
 *        fetched in --robots-attempts tries), as the schedule cutter found (robots/robots.ts).
 *
 * Invariants every result keeps (the property tests check them): nextFetchAt >= now; the interval lies
 * in [minIntervalMs, maxIntervalMs] (every transition clamps it, so a changed policy applies at the next
 * fetch); nextFetchAt is never before freshUntil when one is given; retries <= maxRetries + 1;
 * duplicateOf is set only on duplicates and on retries of duplicates, redirectTo only on redirects.
 *
 * Differences from Nutch, on purpose: a transient failure leaves status `retry` (Nutch: db_unfetched),
 * the retry wait grows exponentially (Nutch: one day), a gone page is rechecked after goneRecheckMs
 * (Nutch: interval * 1.5), a Retry-After does not spend a retry, and a first fetch leaves the interval
 * as it was (Nutch's STATUS_UNKNOWN does the same).
 */
import { isHostFailure } from '../../shared/fetch-codes.js';
import { adaptInterval, clampInterval, nextFetchAt, retryDelayMs, type FetchSchedulePolicy } from './fetch-schedule.js';

/** When a URL given up for its host (unreachable robots.txt, a host that kept failing) is due again at most, ms: a day. */
export const HOST_RECHECK_MS = 24 * 60 * 60 * 1000;
import type { CrawlDbRecord, CrawlDbStatus } from './record.js';

export type FetchOutcome =
  | {
      kind: 'success';
      status: number;
      /** 16 hex xxHash64 of the body; null without a body. */
      signature: string | null;
      /** 16 hex simhash of the page text; null when there is no text. */
      simhash: string | null;
      /** hash of another URL with the same signature or a near simhash, found by the caller */
      duplicateOf: string | null;
      /** hash of the canonical URL when the page names another URL as canonical */
      canonicalOf: string | null;
      /** ms since epoch: the response is fresh until then (RFC 9111 section 4.2); null: unknown. */
      freshUntil: number | null;
    }
  | { kind: 'not-modified'; freshUntil: number | null }
  | { kind: 'redirect'; status: 301 | 302 | 303 | 307 | 308; target: string | null /* hash */ }
  | { kind: 'gone'; status: 404 | 410 }
  | { kind: 'denied'; status: number /* other 4xx: 401, 403, ... */ }
  /**
   * A response that is broken as served (headers too large, not HTTP, bad content encoding, short body),
   * or a fetch the fetcher refused to make (`blocked-address`): asking again would fail the same way.
   */
  | { kind: 'broken'; code: string }
  | {
      kind: 'transient';
      code: string;
      status: number | null /* 5xx, 429, or null for timeouts and connection errors */;
      retryAfterMs: number | null;
      /** The URL's requests in this pass are used up (crawl/retry-after.ts): gone, whatever the retries say. */
      giveUp?: boolean;
    }
  /** Not requested: its host kept failing and a one-shot crawl gave it up (frontier/host-backoff.ts). */
  | { kind: 'given-up'; code: string }
  /** Not requested: robots.txt forbids it (robots-disallowed), or could not be fetched in --robots-attempts tries (robots-unreachable). */
  | { kind: 'robots-denied'; code: RobotsDeniedCode };

export type RobotsDeniedCode = 'robots-disallowed' | 'robots-unreachable';

export interface Transition {
  record: CrawlDbRecord;
  /** content changed? null when not applicable */
  modified: boolean | null;
}


/**
 * Statuses of a URL that holds no page now: the search index drops it (crawl/index-change.ts), the
 * cache its validators (crawl/apply-results.ts), and a page it serves again is new content.
 */
export function holdsNoPage(status: CrawlDbStatus): boolean {
  return status === 'gone' || status === 'redir_perm' || status === 'redir_temp' || status === 'robots_denied';
}

export function applyFetch(old: CrawlDbRecord, outcome: FetchOutcome, now: number, policy: FetchSchedulePolicy): Transition {
  const interval = clampInterval(old.fetchIntervalMs, policy);
  const maxStoredRetries = policy.maxRetries + 1;
  /** Fields every outcome that sent a request sets the same way. */
  const requested = {
    firstFetchAt: old.firstFetchAt ?? now,
    lastFetchAt: now,
    fetchIntervalMs: interval,
    duplicateOf: null,
    redirectTo: null,
  };

  switch (outcome.kind) {
    case 'success': {
      const comparable = !holdsNoPage(old.status) && old.signature !== null && outcome.signature !== null;
      const modified = comparable ? old.signature !== outcome.signature : null;
      const original = outcome.canonicalOf ?? outcome.duplicateOf;
      const content = {
        ...old,
        ...requested,
        retries: 0,
        lastHttpStatus: outcome.status,
        errorCode: null,
        modifiedAt: modified === false ? old.modifiedAt : now,
        signature: outcome.signature,
        simhash: outcome.simhash,
      };
      if (original !== null) {
        return {
          record: { ...content, status: 'duplicate', duplicateOf: original, nextFetchAt: nextFetchAt(now, interval, outcome.freshUntil) },
          modified,
        };
      }
      const adapted = modified === null ? interval : adaptInterval(interval, modified, policy);
      return {
        record: {
          ...content,
          // A copy (or a copy waiting for a retry) whose original went: an original now, new to the index (**).
          status: modified === false && old.duplicateOf === null ? 'notmodified' : 'fetched',
          fetchIntervalMs: adapted,
          nextFetchAt: nextFetchAt(now, adapted, outcome.freshUntil),
        },
        modified,
      };
    }

    case 'not-modified': {
      // RFC 9110 section 15.4.5: the stored response is still the page; signature and modifiedAt stand.
      const base = { ...old, ...requested, retries: 0, lastHttpStatus: 304, errorCode: null };
      if (old.duplicateOf !== null) {
        // Same content as when it was found to duplicate its original (a duplicate, or one waiting for a retry): it still does.
        return {
          record: { ...base, status: 'duplicate', duplicateOf: old.duplicateOf, nextFetchAt: nextFetchAt(now, interval, outcome.freshUntil) },
          modified: false,
        };
      }
      const adapted = adaptInterval(interval, false, policy);
      return {
        record: { ...base, status: 'notmodified', fetchIntervalMs: adapted, nextFetchAt: nextFetchAt(now, adapted, outcome.freshUntil) },
        modified: false,
      };
    }

    case 'redirect':
      return {
        record: {
          ...old,
          ...requested,
          status: outcome.status === 301 || outcome.status === 308 ? 'redir_perm' : 'redir_temp',
          redirectTo: outcome.target,
          retries: 0,
          lastHttpStatus: outcome.status,
          errorCode: null,
          nextFetchAt: now + interval,
        },
        modified: null,
      };

    case 'gone':
    case 'denied':
    case 'broken': {
      const failure = outcome.kind === 'broken' ? { lastHttpStatus: null, errorCode: outcome.code } : { lastHttpStatus: outcome.status, errorCode: `http-${outcome.status}` };
      return {
        record: { ...old, ...requested, status: 'gone', retries: 0, ...failure, nextFetchAt: now + policy.goneRecheckMs },
        modified: null,
      };
    }

    case 'transient': {
      const failed = { ...old, ...requested, lastHttpStatus: outcome.status, errorCode: outcome.code };
      // Given up after a connection failure (no answer at all): the host failed, not the URL, so it is
      // rechecked after a day, not at the rare recheck of a page that is gone.
      const goneUntil = now + (outcome.status === null && isHostFailure(null, outcome.code, null) ? Math.min(policy.goneRecheckMs, HOST_RECHECK_MS) : policy.goneRecheckMs);
      if (outcome.giveUp === true) {
        const retries = Math.min(old.retries + (outcome.retryAfterMs === null ? 1 : 0), maxStoredRetries);
        return { record: { ...failed, status: 'gone', retries, nextFetchAt: goneUntil }, modified: null };
      }
      // A copy waiting for a retry is still the copy it was: a 304 next time keeps it one (not-modified).
      const retrying = { ...failed, duplicateOf: old.duplicateOf };
      if (outcome.retryAfterMs !== null) {
        // The server asked for a pause (RFC 9110 section 10.2.3): honour it, without spending a retry.
        const wait = Math.min(policy.maxIntervalMs, Math.max(0, outcome.retryAfterMs));
        return {
          record: { ...retrying, status: 'retry', retries: Math.min(old.retries, maxStoredRetries), nextFetchAt: now + wait },
          modified: null,
        };
      }
      const retries = Math.min(old.retries + 1, maxStoredRetries);
      if (retries > policy.maxRetries) {
        return { record: { ...failed, status: 'gone', retries, nextFetchAt: goneUntil }, modified: null };
      }
      return { record: { ...retrying, status: 'retry', retries, nextFetchAt: now + retryDelayMs(retries, policy) }, modified: null };
    }

    case 'given-up':
      // No request was sent: fetch times and the last HTTP status stay as they were. Its host failed,
      // not the URL: asked again after a day, not at the rare recheck of a URL that is gone.
      return {
        record: { ...old, status: 'gone', fetchIntervalMs: interval, duplicateOf: null, redirectTo: null, errorCode: outcome.code, nextFetchAt: now + Math.min(policy.goneRecheckMs, HOST_RECHECK_MS) },
        modified: null,
      };

    case 'robots-denied':
      // No request was sent: fetch times and the last HTTP status stay as they were. A URL denied
      // because robots.txt could not be fetched is asked again when the host is (its deny-all stands a
      // day, RFC 9309 section 2.4), not at the rare recheck of a URL robots.txt forbids.
      return {
        record: {
          ...old,
          status: 'robots_denied',
          fetchIntervalMs: interval,
          duplicateOf: null,
          redirectTo: null,
          retries: 0,
          errorCode: outcome.code,
          nextFetchAt: now + (outcome.code === 'robots-unreachable' ? Math.min(policy.goneRecheckMs, HOST_RECHECK_MS) : policy.goneRecheckMs),
        },
        modified: null,
      };

    default:
      return unreachable(outcome);
  }
}

function unreachable(outcome: never): never {
  throw new Error(`unknown fetch outcome ${JSON.stringify(outcome)}`);
}
