/**
 * A normal content host: /robots.txt, /index.html and the generated pages of `graph.ts`, written with
 * every href style of `hrefs.ts`. The last generated page carries `<base href="ORIGIN/">`, so its
 * relative links only resolve correctly against the base. The main host adds `main-extras.ts`.
 * Generations after 0 change some generated pages as `generations.ts` says; nothing else changes.
 */
import type { WebContext } from './context.js';
import { CHANGED_LAST_MODIFIED, NEAR_COPY_WORDS, pageChange } from './generations.js';
import { graphLinks, nodeOfPath, nodePath, PAGES_PER_SECTION } from './graph.js';
import type { HtmlLink } from './html.js';
import { CROSS_HOST_STYLES, directoryOf, SAME_HOST_STYLES, writeHref } from './hrefs.js';
import { mainExtras } from './main-extras.js';
import { errorPage, link, nearCopyDoc, NEVER_FOLLOW_LINKS, notFound, redirect, simpleDoc } from './pages.js';
import { htmlPage, textFile, type HostSite, type HtmlResource, type Resource } from './resource.js';

/** Bench pages carry this much prose, which makes them ~14 KB of HTML. */
const BENCH_PROSE_CHARS = 11_500;

const MAIN_ROBOTS = `# Petrel test web: main host
User-agent: *
Disallow: /private/
Allow: /private/open.html
`;
const OPEN_ROBOTS = `# Petrel test web: everything may be crawled
User-agent: *
Disallow:
`;

export function normalSite(ctx: WebContext, normalIndex: number): HostSite {
  const origin = ctx.normalOrigins[normalIndex];
  if (origin === undefined) throw new Error(`normalSite: no normal host ${normalIndex}`);
  const extras = normalIndex === 0 && ctx.profile === 'full' ? mainExtras(ctx, origin) : null;
  const robots = extras === null ? OPEN_ROBOTS : MAIN_ROBOTS;
  const count = ctx.pagesPerHost;
  const basePageNode = count >= 2 ? count - 1 : null;

  /** A generated page as in generation 0, or with the prose of a page whose text a generation changed. */
  const generatedPage = (node: number, prose: 'original' | 'changed'): HtmlResource => {
    const path = nodePath(node);
    const url = `${origin}${path}`;
    const base = node === basePageNode ? `${origin}/` : null;
    const baseDir = base === null ? directoryOf(path) : '/';
    const links: HtmlLink[] = [];
    if (base === null) links.push(link('#top', 'Back to top'));
    const targets = graphLinks({ host: normalIndex, node, count, hostCount: ctx.normalOrigins.length });
    targets.forEach((target, k) => {
      const sameHost = target.host === normalIndex;
      const styles = sameHost ? SAME_HOST_STYLES : CROSS_HOST_STYLES;
      const style = styles[(node + k) % styles.length] ?? 'absolute-path';
      const targetOrigin = ctx.normalOrigins[target.host] ?? origin;
      const href = writeHref(style, { origin: targetOrigin, path: nodePath(target.node) }, baseDir);
      links.push(link(href, `${pageTitle(target.node)} (host ${target.host + 1})`));
    });
    if (node === 0) {
      ctx.normalOrigins.forEach((other, i) => {
        if (i !== normalIndex) links.push(link(`${other}/index.html`, `Home of host ${i + 1}`));
      });
      if (extras !== null) links.push(...extras.indexLinks);
    }
    links.push(...NEVER_FOLLOW_LINKS);
    const title = `${pageTitle(node)} (host ${normalIndex + 1})`;
    const textSeed = prose === 'changed' ? `normal:${normalIndex}:${node}:changed` : `normal:${normalIndex}:${node}`;
    const minChars = ctx.profile === 'bench' ? BENCH_PROSE_CHARS : 0;
    return htmlPage(simpleDoc({ url, title, links, textSeed, base, minChars }));
  };

  const pageAt = (node: number, generation: number): Resource => {
    const change = pageChange(node, count, generation);
    switch (change.kind) {
      case 'unchanged':
      case 'flaky':
        return generatedPage(node, 'original');
      case 'text':
        return { ...generatedPage(node, 'changed'), lastModified: CHANGED_LAST_MODIFIED };
      case 'gone':
        return errorPage(`${origin}${nodePath(node)}`, change.status);
      case 'redirect':
        return redirect(301, nodePath(change.to));
      case 'exact-copy':
        return { ...generatedPage(change.of, 'original'), lastModified: CHANGED_LAST_MODIFIED };
      case 'near-copy': {
        const source = generatedPage(change.of, 'original');
        return { ...source, doc: nearCopyDoc(source.doc, NEAR_COPY_WORDS), lastModified: CHANGED_LAST_MODIFIED };
      }
    }
  };

  return {
    resolve(pathAndQuery: string, generation: number): Resource {
      if (pathAndQuery === '/robots.txt') return textFile(robots);
      if (pathAndQuery === '/') return redirect(301, '/index.html');
      const node = nodeOfPath(pathAndQuery, count);
      if (node !== null) return pageAt(node, generation);
      return extras?.resolve(pathAndQuery) ?? notFound(`${origin}${pathAndQuery}`);
    },
    flakyFailures(pathAndQuery: string, generation: number): number {
      const node = nodeOfPath(pathAndQuery, count);
      if (node === null) return 0;
      const change = pageChange(node, count, generation);
      return change.kind === 'flaky' ? change.failures : 0;
    },
  };
}

function pageTitle(node: number): string {
  if (node === 0) return 'Home';
  return `Section ${Math.floor((node - 1) / PAGES_PER_SECTION) + 1}, page ${((node - 1) % PAGES_PER_SECTION) + 1}`;
}
