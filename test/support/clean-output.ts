/**
 * What a person must never see from a `petrel` command: a stack frame, or the "Error:" line of an
 * uncaught exception (`Error: ENOENT ...`, `BTreeError: ...`, `TypeError: ...`); and, in normal runs,
 * a fetcher saying it cannot reach the queue server that its own supervisor started or stopped.
 */

const STACK_FRAME = /^\s+at /;
const UNCAUGHT = /Error:/;

/** The lines of `output` that are stack frames or uncaught-exception headers. */
export function crashLines(output: string): string[] {
  return output.split('\n').filter((line) => STACK_FRAME.test(line) || line.includes('    at ') || UNCAUGHT.test(line));
}

const UNREACHABLE_NOISE = /queue server unreachable|cannot reach the queue server|still waiting for the queue server|ECONNREFUSED/;

/** Lines where a fetcher complains about a queue server it should never have found missing. */
export function queueServerNoise(output: string): string[] {
  return output.split('\n').filter((line) => UNREACHABLE_NOISE.test(line));
}
