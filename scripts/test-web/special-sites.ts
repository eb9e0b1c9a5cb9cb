/**
 * The special hosts, one concern each:
 *   robots404   robots.txt answers 404 (RFC 9309: crawl anything); /index.html and /page-1..4.html
 *   robots500   robots.txt answers 500 (RFC 9309: crawl nothing); /index.html and /page-1..3.html exist
 *               but must never be requested
 *   crawlDelay  robots.txt `Crawl-delay: N` for '*'; /index.html and /page-1..3.html
 *   trap        an endless calendar (see trap-site.ts)
 */
import type { WebContext } from './context.js';
import type { SpecialRole } from './hosts.js';
import type { HtmlLink } from './html.js';
import { errorPage, link, NEVER_FOLLOW_LINKS, notFound, redirect, simpleDoc } from './pages.js';
import { htmlPage, textFile, type HostSite, type Resource } from './resource.js';
import { trapSite } from './trap-site.js';

export function specialSite(ctx: WebContext, role: SpecialRole): HostSite {
  const origin = ctx.specialOrigins[role];
  if (origin === undefined) throw new Error(`specialSite: no origin for ${role}`);
  switch (role) {
    case 'robots404':
      return smallSite(ctx, { role, origin, pages: 4, robots: () => notFound(`${origin}/robots.txt`) });
    case 'robots500':
      return smallSite(ctx, { role, origin, pages: 3, robots: () => errorPage(`${origin}/robots.txt`, 500) });
    case 'crawlDelay': {
      const text = `# Petrel test web: slow down\nUser-agent: *\nCrawl-delay: ${ctx.crawlDelaySeconds}\nDisallow:\n`;
      return smallSite(ctx, { role, origin, pages: 3, robots: () => textFile(text) });
    }
    case 'trap':
      return trapSite(ctx, origin);
  }
}

/** /index.html linking to /page-1.html .. /page-N.html; each page links home and to the next page. */
function smallSite(ctx: WebContext, opts: { role: SpecialRole; origin: string; pages: number; robots: () => Resource }): HostSite {
  const { role, origin, pages } = opts;
  const mainIndex = link(`${ctx.normalOrigins[0] ?? origin}/index.html`, 'Main host');
  const pageDoc = (path: string, title: string, links: HtmlLink[]): Resource =>
    htmlPage(simpleDoc({ url: `${origin}${path}`, title, links: [...links, mainIndex, ...NEVER_FOLLOW_LINKS], textSeed: `${role}:${path}` }));
  return {
    resolve(pathAndQuery: string): Resource {
      if (pathAndQuery === '/robots.txt') return opts.robots();
      if (pathAndQuery === '/') return redirect(301, '/index.html');
      if (pathAndQuery === '/index.html') {
        const links: HtmlLink[] = [];
        for (let i = 1; i <= pages; i++) links.push(link(`page-${i}.html`, `Page ${i}`));
        return pageDoc(pathAndQuery, `Special host ${role}`, links);
      }
      const match = /^\/page-([1-9][0-9]*)\.html$/.exec(pathAndQuery);
      const n = match === null ? 0 : Number(match[1]);
      if (n >= 1 && n <= pages) {
        return pageDoc(pathAndQuery, `Special host ${role}, page ${n}`, [link('/index.html', 'Home'), link(`page-${(n % pages) + 1}.html`, 'Next')]);
      }
      return notFound(`${origin}${pathAndQuery}`);
    },
  };
}
