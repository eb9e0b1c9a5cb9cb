/**
 * A bound on the work htmlparser2 does for one page, counted from the parser's own open-element stack.
 *
 * Why. htmlparser2 (10.x) keeps its open elements in an array with the newest first: a start tag is an
 * `unshift` and an end tag an `indexOf` followed by a `shift` per element it closes, each costing time
 * in proportion to the stack's length. Page size alone therefore bounds nothing: a page nested 200,000
 * deep took 16-24 s (with a DOM, 2026-12-03), and a page of 31,000 open `<b>` followed by 400,000 end
 * tags that close nothing (`</x>`, each a scan of the whole stack) takes 9.1 s of CPU for 1.7 MB
 * (2026-12-07, before this bound; it counted start tags only). Flat pages are cheap whatever their
 * size, and real ones are large: the Rust documentation has pages of 50,000 start tags.
 *
 * The count. One unit is one stack element touched:
 *   - a start tag: the stack's length once it is pushed (the `unshift`), plus one per element it closes
 *     by implication (a `<p>` closes an open `<p>`); a void element, which is not pushed, is charged
 *     the stack's length all the same (an over-estimate: real pages are a few dozen deep);
 *   - an end tag that closes elements: as many as it closes (the `indexOf` found them at the top);
 *   - an end tag that closes nothing: the stack's length (the `indexOf` scanned it all).
 *
 * The bound, PARSE_WORK_BUDGET, is what 32,000 nested elements cost (32,000 x 32,001 / 2): the
 * deepest page the extractor has always walked whole. Measured with the streaming extractor on this
 * machine (2026-12-07, a script not kept, best of three, pages of 2 MiB but for the 96 KB of 32,000
 * nested elements): those nested elements take 52 ms; the worst for the budget, end tags that close
 * nothing under 3,000 open elements, 373 ms (1,104 ms unbounded), and under 31,000 open elements 66 ms
 * (10.9 s unbounded); a flat page of links 82 ms. The tag whose work goes over is the last one the
 * parser takes: it is paused for good right after it (a start tag whose attributes are still to come
 * never completes, so no handler sees it opened), nothing after it reaches the handler, and the page
 * is marked truncated. The events before the cut are the same however the page was written in
 * pieces, so the cut is too.
 */
import { Parser, type Handler, type ParserOptions } from 'htmlparser2';

/** Stack elements touched per page at most (see the header): 32,000 nested elements' worth. */
export const PARSE_WORK_BUDGET = (32_000 * 32_001) / 2;

/** The parser's private open-element stack (htmlparser2 10.x `Parser#stack`), read, never written. */
interface ParserStack {
  readonly stack: readonly string[];
}

/**
 * htmlparser2's Parser that stops, paused for good, once the page's parse work passes `budget`.
 * `truncated` says whether it stopped.
 */
export class BudgetedParser extends Parser {
  readonly #budget: number;
  #spent = 0;
  #truncated = false;

  constructor(handler: Partial<Handler>, options: ParserOptions, budget = PARSE_WORK_BUDGET) {
    super(handler, options);
    this.#budget = budget;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  /** @internal htmlparser2's tokenizer callback for a start tag's name. */
  override onopentagname(start: number, endIndex: number): void {
    if (this.#truncated) return;
    const before = this.#depth();
    super.onopentagname(start, endIndex);
    const after = this.#depth();
    // The implied closes (one shift each), then the push at the stack's new length.
    this.#charge(Math.max(0, before + 1 - after) + Math.max(1, after));
  }

  /** @internal htmlparser2's tokenizer callback for an end tag. */
  override onclosetag(start: number, endIndex: number): void {
    if (this.#truncated) return;
    const before = this.#depth();
    super.onclosetag(start, endIndex);
    const closed = before - this.#depth();
    // One that closes k elements found them within its first k; one that closes nothing scanned all.
    this.#charge(closed > 0 ? closed : Math.max(1, before));
  }

  #depth(): number {
    return (this as unknown as ParserStack).stack.length;
  }

  /** Counts `cost`; past the budget, stops the parse here: the parser is paused for good. */
  #charge(cost: number): void {
    this.#spent += cost;
    if (this.#spent <= this.#budget) return;
    this.#truncated = true;
    this.pause();
  }
}
