/**
 * The crawler trap: an endless calendar. /calendar/YYYY/MM (years 1000-9999, months 01-12) links to the
 * previous and next month, so following links never ends in practice; /index.html links into it. Only
 * depth limits (or trap detection) keep a crawl finite, and `SiteModel.reachable` relies on maxDepth.
 */
import type { WebContext } from './context.js';
import { link, NEVER_FOLLOW_LINKS, notFound, redirect, simpleDoc } from './pages.js';
import { htmlPage, textFile, type HostSite, type Resource } from './resource.js';

const ENTRY = { year: 2024, month: 6 };
const FIRST_YEAR = 1000;
const LAST_YEAR = 9999;

export function trapSite(ctx: WebContext, origin: string): HostSite {
  const mainIndex = link(`${ctx.normalOrigins[0] ?? origin}/index.html`, 'Main host');
  const doc = (path: string, title: string, links: ReturnType<typeof link>[]): Resource =>
    htmlPage(simpleDoc({ url: `${origin}${path}`, title, links: [...links, mainIndex, ...NEVER_FOLLOW_LINKS], textSeed: `trap:${path}` }));
  return {
    resolve(pathAndQuery: string): Resource {
      if (pathAndQuery === '/robots.txt') return textFile('# Petrel test web: the trap host\nUser-agent: *\nDisallow:\n');
      if (pathAndQuery === '/') return redirect(301, '/index.html');
      if (pathAndQuery === '/index.html') {
        return doc(pathAndQuery, 'Calendar', [link(calendarPath(ENTRY.year, ENTRY.month), 'This month')]);
      }
      const match = /^\/calendar\/([0-9]{4})\/([0-9]{2})$/.exec(pathAndQuery);
      const year = Number(match?.[1]);
      const month = Number(match?.[2]);
      if (match === null || year < FIRST_YEAR || year > LAST_YEAR || month < 1 || month > 12) return notFound(`${origin}${pathAndQuery}`);
      const links = [link('/index.html', 'Calendar home')];
      const monthIndex = year * 12 + (month - 1);
      for (const [neighbour, text] of [[monthIndex - 1, 'Previous month'], [monthIndex + 1, 'Next month']] as const) {
        const y = Math.floor(neighbour / 12);
        if (y >= FIRST_YEAR && y <= LAST_YEAR) links.push(link(calendarPath(y, (neighbour % 12) + 1), text));
      }
      return doc(pathAndQuery, `Calendar ${match[1]}-${match[2]}`, links);
    },
  };
}

function calendarPath(year: number, month: number): string {
  return `/calendar/${String(year).padStart(4, '0')}/${String(month).padStart(2, '0')}`;
}
