/**
 * Every request the test web answered, in order of arrival. Owned by one TestWeb; the server appends,
 * tests read. An entry is added when its response finishes or its socket closes (so `end` is known)
 * but placed by arrival order. `clear()` also forgets requests still in flight: they belong to
 * whatever ran before the clear.
 */
import { performance } from 'node:perf_hooks';

export interface RequestLogEntry {
  /** ms, performance.timeOrigin + performance.now(), when the request arrived. */
  start: number;
  /** ms, same clock, when the response finished or the socket closed. */
  end: number;
  /**
   * ms, same clock, when the server handed the response's last bytes to the socket (`res.end`), or
   * `end` if it never did. At or before `end`, and never made later by an event loop that was busy
   * after the write, as `end` (the 'finish' event) can be by 100 ms on a loaded machine: what
   * politeness gaps are measured from, so that lag cannot make them look shorter than they were.
   */
  handedOver: number;
  /** "127.0.0.2:PORT": the host that received it (its listening address, not the Host header). */
  host: string;
  /** The Host header, where a host serves several names (the sitemap host); absent elsewhere. */
  hostHeader?: string;
  method: string;
  /** Raw request target as received, e.g. "/section-1/p%61ge-2.html". */
  path: string;
  /** Status sent; 0 when the client went away before any response was sent. */
  status: number;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  userAgent: string | null;
  /** Body bytes sent: 0 for HEAD and 304; for an aborted response, the bytes flushed before the abort. */
  bytes: number;
  /** SHA-1 (hex) of the whole body when all of it was sent (what an archive of the response must hold), else null; of an empty body for HEAD and 304. */
  bodySha1: string | null;
}

/** ms on the log's clock. */
export function logClock(): number {
  return performance.timeOrigin + performance.now();
}

export interface Arrival {
  readonly seq: number;
  readonly epoch: number;
}

export class RequestLog {
  /** The array handed out as `TestWeb.log`; cleared in place so references stay live. */
  readonly entries: RequestLogEntry[] = [];
  /** Arrival sequence number of each entry, parallel to `entries`. */
  #seqs: number[] = [];
  #nextSeq = 0;
  #epoch = 0;

  arrive(): Arrival {
    return { seq: this.#nextSeq++, epoch: this.#epoch };
  }

  record(arrival: Arrival, entry: RequestLogEntry): void {
    if (arrival.epoch !== this.#epoch) return;
    // Responses mostly finish in arrival order, so the insertion point is almost always the end.
    let at = this.#seqs.length;
    while (at > 0 && (this.#seqs[at - 1] ?? 0) > arrival.seq) at--;
    this.#seqs.splice(at, 0, arrival.seq);
    this.entries.splice(at, 0, entry);
  }

  clear(): void {
    this.#epoch++;
    this.entries.length = 0;
    this.#seqs.length = 0;
  }
}
