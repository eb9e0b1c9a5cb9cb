/**
 * robots.txt as RFC 9309 reads it, for the model's ground truth (`SiteModel.robotsAllows`). The policy is
 * derived from the robots.txt response the server actually sends, so the model cannot disagree with it.
 */
import { normalizeEscapes } from './canonical.js';

/** Our product token (RFC 9309 §2.2.1): the crawler identifies as `petrel/<version>`. */
export const PETREL_AGENT = 'petrel';

export interface RobotsRule {
  allow: boolean;
  /** Path pattern with RFC 9309 `*` and trailing `$` special characters, escapes normalized. */
  pattern: string;
}

export type RobotsPolicy =
  | { kind: 'allow-all' }
  | { kind: 'disallow-all' }
  | { kind: 'rules'; rules: readonly RobotsRule[]; crawlDelaySeconds: number | null };

/**
 * RFC 9309 §2.3.1: 2xx -> parse the body; 4xx ("unavailable") -> crawl anything; 5xx or anything else
 * ("unreachable") -> crawl nothing. (Redirects are followed by crawlers; the test web serves none here.)
 */
export function policyFromResponse(status: number, body: string, agent: string = PETREL_AGENT): RobotsPolicy {
  if (status >= 200 && status < 300) return parseRobots(body, agent);
  if (status >= 400 && status < 500) return { kind: 'allow-all' };
  return { kind: 'disallow-all' };
}

/**
 * RFC 9309 §2.1-2.2.1: a group is one or more user-agent lines followed by rules; the groups naming our
 * product token (case-insensitively) are merged and used, else the '*' groups, else no rules at all.
 */
export function parseRobots(text: string, agent: string = PETREL_AGENT): RobotsPolicy {
  interface Group { agents: string[]; rules: RobotsRule[]; crawlDelay: number | null }
  const groups: Group[] = [];
  let current: Group | null = null;
  let inAgentLines = false;
  for (const rawLine of text.split(/\r\n|\r|\n/)) {
    const line = rawLine.replace(/#.*$/, '').trim();
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'user-agent') {
      if (current === null || !inAgentLines) {
        current = { agents: [], rules: [], crawlDelay: null };
        groups.push(current);
      }
      current.agents.push(value.toLowerCase());
      inAgentLines = true;
      continue;
    }
    inAgentLines = false;
    if (current === null) continue;
    if ((key === 'allow' || key === 'disallow') && value !== '') {
      current.rules.push({ allow: key === 'allow', pattern: normalizeEscapes(value) });
    } else if (key === 'crawl-delay') {
      const seconds = Number(value);
      if (Number.isFinite(seconds) && seconds >= 0) current.crawlDelay = seconds;
    }
  }
  const token = agent.toLowerCase();
  let chosen = groups.filter((group) => group.agents.includes(token));
  if (chosen.length === 0) chosen = groups.filter((group) => group.agents.includes('*'));
  return {
    kind: 'rules',
    rules: chosen.flatMap((group) => group.rules),
    crawlDelaySeconds: chosen.find((group) => group.crawlDelay !== null)?.crawlDelay ?? null,
  };
}

/**
 * RFC 9309 §2.2.2: the most specific (longest) matching rule wins; on a tie, allow wins; no match means
 * allowed; /robots.txt itself is always allowed. `pathAndQuery` is canonical (escapes normalized).
 */
export function isAllowed(policy: RobotsPolicy, pathAndQuery: string): boolean {
  if (policy.kind === 'allow-all') return true;
  if (policy.kind === 'disallow-all') return false;
  if (pathAndQuery === '/robots.txt') return true;
  let best: RobotsRule | null = null;
  for (const rule of policy.rules) {
    if (!patternMatches(rule.pattern, pathAndQuery)) continue;
    if (best === null || rule.pattern.length > best.pattern.length || (rule.pattern.length === best.pattern.length && rule.allow)) {
      best = rule;
    }
  }
  return best === null || best.allow;
}

function patternMatches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const body = anchored ? pattern.slice(0, -1) : pattern;
  const source = body
    .split('*')
    .map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}${anchored ? '$' : ''}`).test(path);
}
