/**
 * A page's links resolved against its base URL and normalized (shared/url-normalize.ts), with the
 * answers of recent pages remembered per directory of their base URL.
 *
 * Pages of one directory share most of their links (navigation, sidebars, the index of a manual), and
 * a WHATWG parse with the normalization costs about 1.4 µs a link: on 2,000 pages of the Rust
 * documentation (75 links a page) resolving took 0.105 ms of the extraction's 0.53 ms a page, through
 * this resolver 0.05 ms (a script not kept, 2026-12-07).
 *
 * The answer for a relative reference that begins with anything but `?` or `#` depends on the base
 * URL's scheme, host, port and path up to its last `/` only (the WHATWG URL standard's relative state
 * takes the base's path and removes its last segment; its query is dropped), so answers are
 * remembered per such directory and are the same as a fresh parse. Other references (`?query`,
 * `http:?query`, and anything the parser would strip characters from first) are parsed each time
 * (`dependsOnDirectoryOnly`); a property test compares every answer with a fresh parse. Absolute
 * references do not depend on the base at all, so remembering them per directory is only redundant,
 * never wrong.
 *
 * Memory bound: at most MAX_DIRECTORIES directories (the least recently used goes first) of at most
 * MAX_LINKS answers each, an answer holding the reference as written (a copy of its own, never a view
 * of the page), its normalized URL and origin, about 100 bytes besides their characters; and at most
 * MAX_CHARS characters of those strings in all (older directories are forgotten to make room, and an
 * answer that still does not fit is not kept), so a hostile site's long references cannot grow it:
 * 32,768 answers and 4 Mi characters (4 to 8 MiB) at most; 3.8 MB after 16,051 pages of the Rust
 * documentation.
 */
import { normalizeUrl, type NormalizeResult } from '../shared/url-normalize.js';
import { ownString } from '../shared/own-string.js';

export const MAX_DIRECTORIES = 32;
export const MAX_LINKS = 1024;
export const MAX_CHARS = 4 * 1024 * 1024;

/** The answers remembered for one directory, and the characters of their strings. */
interface Directory {
  readonly answers: Map<string, NormalizeResult>;
  chars: number;
}

export class LinkResolver {
  readonly #maxLength: number;
  readonly #byDirectory = new Map<string, Directory>();
  #chars = 0;

  /** `maxLength`: longest normalized URL accepted (normalizeUrl's bound), the same for every answer. */
  constructor(maxLength: number) {
    this.#maxLength = maxLength;
  }

  /** Resolves references of one page: `baseUrl` is a normalized URL (the page's, or its `<base href>` resolved). */
  forPage(baseUrl: string): (href: string) => NormalizeResult {
    const maxLength = this.#maxLength;
    const directory = this.#directory(directoryOf(baseUrl));
    const answers = directory.answers;
    return (href) => {
      if (!dependsOnDirectoryOnly(href)) return normalizeUrl(href, baseUrl, maxLength);
      let answer = answers.get(href);
      if (answer === undefined) {
        answer = normalizeUrl(href, baseUrl, maxLength);
        if (answers.size < MAX_LINKS) this.#remember(directory, href, answer);
      }
      return answer;
    };
  }

  #remember(directory: Directory, href: string, answer: NormalizeResult): void {
    const chars = href.length + (answer.ok ? answer.url.length + answer.origin.length : 0);
    // Room is made by forgetting the least recently used directories, never the page's own.
    for (const [name, other] of this.#byDirectory) {
      if (this.#chars + chars <= MAX_CHARS || other === directory) break;
      this.#byDirectory.delete(name);
      this.#chars -= other.chars;
    }
    if (this.#chars + chars > MAX_CHARS) return;
    directory.answers.set(ownString(href), answer);
    directory.chars += chars;
    this.#chars += chars;
  }

  /** Directories remembered. */
  get directories(): number {
    return this.#byDirectory.size;
  }

  /** Answers remembered, all directories together. */
  get answers(): number {
    let count = 0;
    for (const directory of this.#byDirectory.values()) count += directory.answers.size;
    return count;
  }

  /** Characters of the remembered answers' strings (references, URLs and origins). */
  get chars(): number {
    return this.#chars;
  }

  /** Whether the answer for `href` in `directory` (a `directoryOf`) is remembered; does not count as a use. */
  remembers(directory: string, href: string): boolean {
    return this.#byDirectory.get(directory)?.answers.has(href) ?? false;
  }

  #directory(name: string): Directory {
    let directory = this.#byDirectory.get(name);
    if (directory !== undefined) {
      // Most recently used last, so the first key is the one to drop.
      this.#byDirectory.delete(name);
    } else {
      if (this.#byDirectory.size >= MAX_DIRECTORIES) {
        const [oldest, dropped] = this.#byDirectory.entries().next().value!;
        this.#byDirectory.delete(oldest);
        this.#chars -= dropped.chars;
      }
      directory = { answers: new Map(), chars: 0 };
      name = ownString(name);
    }
    this.#byDirectory.set(name, directory);
    return directory;
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
