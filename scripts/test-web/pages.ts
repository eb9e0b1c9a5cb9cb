/** Building blocks shared by every host's site: simple documents, error pages, redirects. */
import type { HtmlDoc, HtmlLink, HtmlSection } from './html.js';
import { prng } from './prng.js';
import { htmlPage, type HtmlResource, type RedirectResource } from './resource.js';
import { paragraphs, sentence, swapWords } from './text.js';

/** Links no crawler may follow; on every page of normal hosts. */
export const NEVER_FOLLOW_LINKS: readonly HtmlLink[] = [
  { href: 'mailto:webmaster@localhost', text: 'Write to the webmaster', rel: null },
  { href: 'javascript:void(0)', text: 'Toggle the menu', rel: null },
];

export function link(href: string, text: string, rel: string | null = null): HtmlLink {
  return { href, text, rel };
}

export interface SimpleDocOptions {
  /** Canonical URL of the page. */
  url: string;
  title: string;
  links: readonly HtmlLink[];
  /** Seeds the prose. */
  textSeed: string;
  metaRobots?: string | null;
  base?: string | null;
  /** Prose size: at least this many characters of paragraph text (default: three paragraphs). */
  minChars?: number;
}

export function simpleDoc(opts: SimpleDocOptions): HtmlDoc {
  const minChars = opts.minChars ?? 0;
  let cached: readonly HtmlSection[] | undefined;
  return {
    title: opts.title,
    description: sentence(prng(`description:${opts.textSeed}`)),
    canonical: opts.url,
    base: opts.base ?? null,
    metaRobots: opts.metaRobots ?? null,
    heading: opts.title,
    links: opts.links,
    sections: () => (cached ??= sectionsOf(paragraphs(`text:${opts.textSeed}`, { minCount: 3, minChars }), opts.textSeed)),
  };
}

/** `doc` with a run of `count` words of its first paragraph swapped: a near duplicate (same links, title, canonical). */
export function nearCopyDoc(doc: HtmlDoc, count: number): HtmlDoc {
  let cached: readonly HtmlSection[] | undefined;
  const swapped = (): HtmlSection[] => {
    const [first, ...rest] = doc.sections();
    if (first === undefined) throw new Error('nearCopyDoc: a document without prose');
    const [paragraph = '', ...others] = first.paragraphs;
    return [{ heading: first.heading, paragraphs: [swapWords(paragraph, count), ...others] }, ...rest];
  };
  return { ...doc, sections: () => (cached ??= swapped()) };
}

/** Groups paragraphs under headings, four to a section, as articles usually are. */
function sectionsOf(texts: readonly string[], seed: string): HtmlSection[] {
  const rng = prng(`headings:${seed}`);
  const sections: HtmlSection[] = [];
  for (let i = 0; i < texts.length; i += 4) {
    const heading = sentence(rng).split(' ').slice(0, 4).join(' ').replace(/[,.]$/, '');
    sections.push({ heading, paragraphs: texts.slice(i, i + 4) });
  }
  return sections;
}

const REASONS: Readonly<Record<number, string>> = {
  404: 'Not Found',
  410: 'Gone',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** An HTML error page with no links (crawlers do not follow links of error pages anyway). */
export function errorPage(url: string, status: number, headers: Record<string, string> = {}): HtmlResource {
  const title = `${status} ${REASONS[status] ?? 'Error'}`;
  const doc: HtmlDoc = {
    title,
    description: `The test web answers ${title} here.`,
    canonical: url,
    base: null,
    metaRobots: null,
    heading: title,
    links: [],
    sections: () => [{ heading: 'What happened', paragraphs: [`This URL answers ${title}, deliberately.`] }],
  };
  return htmlPage(doc, { status, headers });
}

export function notFound(url: string): HtmlResource {
  return errorPage(url, 404);
}

export function redirect(status: RedirectResource['status'], location: string): RedirectResource {
  return { kind: 'redirect', status, location };
}
