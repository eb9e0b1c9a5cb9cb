/**
 * The many ways a page writes a link to the same target, so a crawler's link resolution and URL
 * normalization are exercised on every page. Each style must resolve (against the page's base) to
 * exactly the canonical target URL; the model checks this by resolving every href it serves.
 */

export type HrefStyle =
  | 'relative' // page-3.html, ../section-2/page-7.html, section-1/page-2.html
  | 'dot-relative' // ./page-3.html
  | 'absolute-path' // /section-2/page-7.html
  | 'absolute-url' // http://127.0.0.2:PORT/section-2/page-7.html
  | 'protocol-relative' // //127.0.0.3:PORT/section-2/page-7.html
  | 'fragment' // page-3.html#part-2
  | 'encoded' // /section-1/p%61ge-2.html (an unreserved character, escaped in lowercase hex)
  | 'dot-segment'; // /section-1/./page-2.html

/** Cycled through link by link, so every page of ten links or more shows every style. */
export const SAME_HOST_STYLES: readonly HrefStyle[] = [
  'relative',
  'absolute-path',
  'encoded',
  'dot-relative',
  'absolute-url',
  'fragment',
  'dot-segment',
  'protocol-relative',
];
export const CROSS_HOST_STYLES: readonly HrefStyle[] = ['absolute-url', 'protocol-relative'];

export interface HrefTarget {
  /** e.g. "http://127.0.0.2:PORT" */
  origin: string;
  /** Canonical absolute path, e.g. "/section-2/page-7.html". */
  path: string;
}

/**
 * `baseDir` is the directory of the page's effective base URL (e.g. "/section-2/"); it only matters for
 * the relative styles, which callers use for same-host targets only.
 */
export function writeHref(style: HrefStyle, target: HrefTarget, baseDir: string): string {
  const { origin, path } = target;
  switch (style) {
    case 'relative':
      return relativePath(baseDir, path);
    case 'dot-relative':
      return `./${relativePath(baseDir, path)}`;
    case 'absolute-path':
      return path;
    case 'absolute-url':
      return `${origin}${path}`;
    case 'protocol-relative':
      return `${origin.replace(/^https?:/, '')}${path}`;
    case 'fragment':
      return `${relativePath(baseDir, path)}#part-2`;
    case 'encoded':
      return encodeSecondLetter(path);
    case 'dot-segment':
      return dotSegment(path);
  }
}

/** Shortest relative reference from directory `fromDir` (ends in '/') to absolute path `to`. */
export function relativePath(fromDir: string, to: string): string {
  const from = fromDir.split('/').filter((segment) => segment !== '');
  const toSegments = to.split('/').slice(1);
  const file = toSegments.pop() ?? '';
  let common = 0;
  while (common < from.length && common < toSegments.length && from[common] === toSegments[common]) common++;
  const relative = '../'.repeat(from.length - common) + [...toSegments.slice(common), file].join('/');
  // An empty relative reference would mean "this very document"; never produced for file targets.
  return relative === '' ? './' : relative;
}

/** Directory part of an absolute path: "/section-2/page-7.html" -> "/section-2/". */
export function directoryOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/') + 1);
}

function encodeSecondLetter(path: string): string {
  const slash = path.lastIndexOf('/');
  const file = path.slice(slash + 1);
  const char = file.charAt(1);
  if (!/^[A-Za-z0-9]$/.test(char)) return path;
  const escaped = `%${char.charCodeAt(0).toString(16).toLowerCase()}`;
  return `${path.slice(0, slash + 1)}${file.charAt(0)}${escaped}${file.slice(2)}`;
}

function dotSegment(path: string): string {
  const dir = directoryOf(path);
  const file = path.slice(dir.length);
  return dir === '/' ? `/section-1/../${file}` : `${dir}./${file}`;
}
