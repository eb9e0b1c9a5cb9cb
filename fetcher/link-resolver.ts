/**
 * A page's links resolved against its base URL and normalized (shared/url-normalize.ts), with the
 * answers of recent pages remembered per directory of their base URL.
 *
 * Pages of one directory share most of their links (navigation, sidebars, the index of a manual), and
 * a WHATWG parse with the normalization costs about 1.4 µs a link: on 2,000 pages of the Rust
 * documentation (75 links a page) resolving took 0.105 ms of the extraction's 0.53 ms a page, through
 * this resolver 0.05 ms (a script not kept, 2026-12-07). The answer for a relative reference that begins with anything
 * but `?` or `#` depends on the base URL's scheme, host, port and path up to its last `/` only (the
 * WHATWG URL standard's relative state takes the base's path and removes its last segment; its query
 * is dropped), so answers are remembered per such directory and are the same as a fresh parse. Other
 * references (`?query`, `http:?query`, and anything the parser would strip characters from first) are
 * parsed each time (`dependsOnDirectoryOnly`; a property test compares every answer with a fresh parse). Absolute references do not depend on the base at all, so
 * remembering them per directory is only redundant, never wrong.
 *
 * Memory bound: at most MAX_DIRECTORIES directories (the least recently used goes first) of at most
 * MAX_LINKS answers each, an answer holding the reference as written (a copy of its own, never a view
 * of the page) and its normalized URL: with references of ~60 characters about 200 bytes an answer,
 * about 6 MiB in all at most.
 */
import { normalizeUrl, type NormalizeResult } from '../shared/url-normalize.js';
import { ownString } from '../shared/own-string.js';

export const MAX_DIRECTORIES = 32;
export const MAX_LINKS = 1024;

export class LinkResolver {
  readonly #maxLength: number;
  readonly #byDirectory = new Map<string, Map<string, NormalizeResult>>();

  /** `maxLength`: longest normalized URL accepted (normalizeUrl's bound), the same for every answer. */
  constructor(maxLength: number) {
    this.#maxLength = maxLength;
  }

  /** Resolves references of one page: `baseUrl` is a normalized URL (the page's, or its `<base href>` resolved). */
  forPage(baseUrl: string): (href: string) => NormalizeResult {
    const maxLength = this.#maxLength;
    const answers = this.#directory(directoryOf(baseUrl));
    return (href) => {
      if (!dependsOnDirectoryOnly(href)) return normalizeUrl(href, baseUrl, maxLength);
      let answer = answers.get(href);
      if (answer === undefined) {
        answer = normalizeUrl(href, baseUrl, maxLength);
        if (answers.size < MAX_LINKS) answers.set(ownString(href), answer);
      }
      return answer;
    };
  }

  /** Directories remembered. */
  get directories(): number {
    return this.#byDirectory.size;
  }

  /** Answers remembered, all directories together. */
  get answers(): number {
    let count = 0;
    for (const answers of this.#byDirectory.values()) count += answers.size;
    return count;
  }

  /** Whether the answer for `href` in `directory` (a `directoryOf`) is remembered; does not count as a use. */
  remembers(directory: string, href: string): boolean {
    return this.#byDirectory.get(directory)?.has(href) ?? false;
  }

  #directory(directory: string): Map<string, NormalizeResult> {
    let answers = this.#byDirectory.get(directory);
    if (answers !== undefined) {
      // Most recently used last, so the first key is the one to drop.
      this.#byDirectory.delete(directory);
    } else {
      if (this.#byDirectory.size >= MAX_DIRECTORIES) this.#byDirectory.delete(this.#byDirectory.keys().next().value!);
      answers = new Map();
    }
    this.#byDirectory.set(directory, answers);
    return answers;
  }
}

/** A normalized URL up to and including the last `/` of its path (its query, which begins at the first `?`, cut off). */
export function directoryOf(url: string): string {
  const query = url.indexOf('?');
  return url.slice(0, url.lastIndexOf('/', query < 0 ? url.length - 1 : query - 1) + 1);
}

/**
 * Whether the WHATWG parser resolves `href` against the base's directory alone. It does unless the
 * reference is empty, a query or fragment of the base itself (`?q`, `#f`), or starts with a character
 * the parser strips first (C0 controls and space); the same holds for what follows a scheme, because
 * `http:?q` against an http base is the base's own path with that query. A reference with a tab or a
 * line break anywhere is parsed afresh too: the parser removes those before anything else.
 */
export function dependsOnDirectoryOnly(href: string): boolean {
  const n = href.length;
  let rest = 0;
  let c = n > 0 ? href.charCodeAt(0) : 0;
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) {
    // A scheme: a letter, then letters, digits, "+", "-" or ".", then ":".
    let i = 1;
    while (i < n && isSchemeChar((c = href.charCodeAt(i)))) i++;
    if (i < n && c === 0x3a) rest = i + 1;
  }
  if (rest >= n) return false;
  const first = href.charCodeAt(rest);
  if (first <= 0x20 || first === 0x3f || first === 0x23) return false;
  return href.indexOf('\t') < 0 && href.indexOf('\n') < 0 && href.indexOf('\r') < 0;
}

function isSchemeChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e;
}
