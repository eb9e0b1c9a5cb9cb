/**
 * Bounds on the shape of a JSON body, checked over its bytes before JSON.parse builds anything.
 * JSON.parse's memory grows with the number of values, not with bytes: 40 MB of `[[],[],...]` is 13
 * million arrays (over 1 GB of heap), and 40 MB of `[[[[...]]]]` nests 20 million deep. The byte
 * limit of a route cannot bound that; this scan can, in one pass and without allocating.
 *
 * What is counted: every value and every object key (a "token": an array, an object, a string, a
 * number, true, false, null), and the nesting depth of arrays and objects. Strings are skipped with
 * their escapes, so brackets and commas inside them count for nothing. UTF-8 needs no decoding here:
 * every byte of a multi-byte character is >= 0x80 and never one of JSON's structural characters.
 * The scan does not validate JSON; JSON.parse does that afterwards, on bodies this scan let through.
 *
 * The protocol's bodies are far inside these bounds: a results post nests 4 deep, and a fetcher's
 * batch of 64 results holds at most about 330,000 tokens (64 x 5,000 links plus some 60 fields each).
 * Measured on Node 20 (JSON.parse of `[{},{},...]` and `[[],[],...]`, heap before and after): 500,000
 * empty objects cost 34 MB of heap (49 MB of resident memory), 500,000 empty arrays 22 MB; 13 million
 * empty arrays, 39 MB of JSON, cost 520 MB of heap and 910 MB resident.
 */

export const JSON_BOUNDS = {
  /** Arrays and objects nested at most this deep. */
  maxDepth: 16,
  /** Values and keys at most. */
  maxTokens: 500_000,
} as const;

export interface JsonBounds {
  readonly maxDepth: number;
  readonly maxTokens: number;
}

export type JsonShapeVerdict = { readonly ok: true; readonly tokens: number; readonly depth: number } | { readonly ok: false; readonly problem: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Whether `bytes` (UTF-8 JSON) stays within `bounds`; stops at the first token or level beyond them. */
export function checkJsonShape(bytes: Uint8Array, bounds: JsonBounds = JSON_BOUNDS): JsonShapeVerdict {
  let depth = 0;
  let deepest = 0;
  let tokens = 0;
  // True where a value (or a key) may start: at the beginning, after [ { , and :.
  let expectToken = true;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      if (expectToken) tokens++;
      expectToken = false;
      // Skip the string: to the next quote that no backslash escapes.
      for (i++; i < length; i++) {
        const inner = bytes[i]!;
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      tokens++;
      depth++;
      if (depth > deepest) deepest = depth;
      if (depth > bounds.maxDepth) return { ok: false, problem: `JSON nested deeper than ${bounds.maxDepth} levels` };
      expectToken = true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
      expectToken = false;
    } else if (byte === COMMA || byte === COLON) {
      expectToken = true;
    } else if (!isWhitespace(byte)) {
      // A number or a literal starts here (its other bytes follow with expectToken false).
      if (expectToken) tokens++;
      expectToken = false;
    }
    if (tokens > bounds.maxTokens) return { ok: false, problem: `more than ${bounds.maxTokens} JSON values and keys` };
  }
  return { ok: true, tokens, depth: deepest };
}
