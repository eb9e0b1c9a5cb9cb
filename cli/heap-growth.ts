/**
 * How far V8 lets the JavaScript heap of a long-running Petrel process grow past what its last full
 * garbage collection kept, before it collects again (V8's `--heap-growing-percent`, set at start).
 *
 * V8's own heuristics let the heap grow up to four times the live data while collecting is cheap, and
 * give little back: a queue server handed 1,000,000 URLs by `inject` kept 506 MiB of RSS where its
 * live data needed far less. Measured on this two-core machine (2026-12-06), against V8's heuristics:
 * - `bench-queue-server inject --urls 1000000 --in-flight 4`: RSS after 506 MiB; 291 at 20 %, 327 at
 *   50 %, 371 at 100 %, at the same rate (25,976; 26,180; 27,027; 27,043 URLs/s).
 * - bench-crawl on the test web (6,000 pages, the build before as its baseline, two rounds each): at
 *   25 % the crawl's peak PSS fell from 677-752 to 441-449 MB but its CPU per page rose 13-18 % (more
 *   full collections in the fetchers and the queue server); at 100 % PSS 507-509 against 743-746 MB,
 *   CPU 5.03 and 5.26 ms a page against 5.01 and 5.03.
 * - In `bench-queue-server scale` to a million known URLs it changed nothing (RSS at the stop 565,
 *   561 and 553 MiB at 0, 25 and 50 %): what grows there is outside the JavaScript heap.
 * Hence 100.
 */
import { setFlagsFromString } from 'node:v8';
import { Option } from 'commander';
import { integerOption } from './options.js';

export const DEFAULT_HEAP_GROWTH_PERCENT = 100;

/** The `--heap-growth <percent>` option (0: V8's own heuristics). */
export function heapGrowthOption(): Option {
  return new Option(
    '--heap-growth <percent>',
    "how far the JavaScript heap may grow past what the last full garbage collection kept before the next one, percent (0: V8's own heuristics, which hold up to 4 times the live data)",
  )
    .argParser(integerOption('--heap-growth', 0, 300))
    .default(DEFAULT_HEAP_GROWTH_PERCENT);
}

/** Applies the option's value to this process; call it before the process builds its state. */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
