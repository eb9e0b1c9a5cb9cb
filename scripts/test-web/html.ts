/**
 * HTML documents of the test web: a plain description (`HtmlDoc`) that the server renders and the model
 * reads. Links are kept exactly as written in the `href` attribute, so the model resolves them the way a
 * crawler must (against `<base href>` when there is one, else the page URL).
 */

export interface HtmlLink {
  /** As written in the attribute (before HTML escaping): relative, absolute, protocol-relative, mailto:... */
  href: string;
  text: string;
  /** The `rel` attribute, e.g. 'nofollow'; null when absent. */
  rel: string | null;
}

export interface HtmlSection {
  heading: string;
  paragraphs: readonly string[];
}

export interface HtmlDoc {
  title: string;
  description: string;
  /** Absolute URL for `<link rel="canonical">`: the page itself. */
  canonical: string;
  /** `<base href>` as written, or null when the page has none. */
  base: string | null;
  /** Content of `<meta name="robots">`, or null when absent. */
  metaRobots: string | null;
  heading: string;
  /** Prose, computed on demand: the model needs the links of a page, never its text. */
  sections: () => readonly HtmlSection[];
  /** In document order; every one is rendered as `<a href>`. */
  links: readonly HtmlLink[];
  /** Markup written as is at the end of the body (the evil page's scripts), or absent. */
  rawMarkup?: string;
}

const STYLE = `body{font-family:Georgia,serif;margin:0 auto;max-width:46rem;line-height:1.5;color:#222}
header,footer{border-color:#ccd;border-style:solid;border-width:0 0 1px;padding:.5rem 0}
footer{border-width:1px 0 0;font-size:.9em}article h2{margin-top:1.5rem}ul.links{columns:2}`;

export function renderHtml(doc: HtmlDoc): string {
  const parts: string[] = [
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
    `<title>${escapeText(doc.title)}</title>\n`,
    `<meta name="description" content="${escapeAttribute(doc.description)}">\n`,
  ];
  if (doc.metaRobots !== null) parts.push(`<meta name="robots" content="${escapeAttribute(doc.metaRobots)}">\n`);
  parts.push(`<link rel="canonical" href="${escapeAttribute(doc.canonical)}">\n`);
  if (doc.base !== null) parts.push(`<base href="${escapeAttribute(doc.base)}">\n`);
  parts.push(`<style>${STYLE}</style>\n</head>\n<body>\n`);
  parts.push(`<header id="top"><p class="site">Petrel test web</p></header>\n<main>\n<article>\n`);
  parts.push(`<h1>${escapeText(doc.heading)}</h1>\n`);
  for (const section of doc.sections()) {
    parts.push(`<section>\n<h2>${escapeText(section.heading)}</h2>\n`);
    for (const text of section.paragraphs) parts.push(`<p>${escapeText(text)}</p>\n`);
    parts.push('</section>\n');
  }
  parts.push('</article>\n<nav>\n<ul class="links">\n');
  for (const link of doc.links) {
    const rel = link.rel === null ? '' : ` rel="${escapeAttribute(link.rel)}"`;
    parts.push(`<li><a href="${escapeAttribute(link.href)}"${rel}>${escapeText(link.text)}</a></li>\n`);
  }
  parts.push(`</ul>\n</nav>\n</main>\n<footer><p>${FOOTER_TEXT}</p></footer>\n`);
  if (doc.rawMarkup !== undefined) parts.push(doc.rawMarkup);
  parts.push('</body>\n</html>\n');
  return parts.join('');
}

/**
 * The text a browser shows of `renderHtml(doc)`, as the model's ground truth for search tests: the
 * header line, the h1, each section's heading and paragraphs, every link's text, the footer, one
 * element per line, in document order (kept beside renderHtml so the two cannot drift).
 */
export function visibleText(doc: HtmlDoc): { headings: string[]; body: string } {
  const sections = doc.sections();
  const headings = [doc.heading, ...sections.map((section) => section.heading)];
  const body = [
    'Petrel test web',
    doc.heading,
    ...sections.flatMap((section) => [section.heading, ...section.paragraphs]),
    ...doc.links.map((link) => link.text),
    FOOTER_TEXT,
  ].join('\n');
  return { headings, body };
}

const FOOTER_TEXT = 'Generated deterministically for crawler tests.';

export function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function escapeAttribute(text: string): string {
  return escapeText(text).replace(/"/g, '&quot;');
}
