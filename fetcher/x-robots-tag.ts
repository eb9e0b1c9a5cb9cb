/**
 * The X-Robots-Tag response header: the meta robots tag for any response, HTML or not (Google's "Robots
 * meta tag and X-Robots-Tag HTTP header specifications"; the directive set is the meta tag's, REP as
 * in RFC 9309's family). Each field value is a comma list of directives; a directive may start with a
 * user agent and a colon (`googlebot: noindex`), and then it and the directives after it in that field
 * apply to that agent only. Petrel obeys those for no agent and for its own token (`petrel`), the
 * same rule as `<meta name="robots">` and `<meta name="petrel">` (html-extract.ts). Recognized:
 * `noindex`, `nofollow`, `none` (both), and `noarchive` (no public cached copy:
 * queue-server/warc/cached-copy.ts); others (`all`, `max-snippet: 20`, ...) change nothing here. Pure;
 * at most MAX_FIELD_CHARS of each field are read.
 */
export const MAX_FIELD_CHARS = 4096;

/** Directives that carry a value after a colon: their name is not a user agent. */
const VALUED = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

export interface XRobots {
  readonly noindex: boolean;
  readonly nofollow: boolean;
  readonly noarchive: boolean;
}

export function xRobotsTag(header: string | readonly string[] | undefined, agentToken: string): XRobots {
  let noindex = false;
  let nofollow = false;
  let noarchive = false;
  const agent = agentToken.toLowerCase();
  const fields = header === undefined ? [] : typeof header === 'string' ? [header] : header;
  for (const field of fields) {
    let appliesTo: string | null = null;
    for (const raw of field.slice(0, MAX_FIELD_CHARS).split(',')) {
      let directive = raw.trim().toLowerCase();
      const prefixed = /^([a-z0-9_.-]+)\s*:\s*(.*)$/.exec(directive);
      if (prefixed !== null && !VALUED.has(prefixed[1]!)) {
        appliesTo = prefixed[1]!;
        directive = prefixed[2]!.trim();
      }
      if (appliesTo !== null && appliesTo !== agent) continue;
      if (directive === 'noindex' || directive === 'none') noindex = true;
      if (directive === 'nofollow' || directive === 'none') nofollow = true;
      if (directive === 'noarchive') noarchive = true;
    }
  }
  return { noindex, nofollow, noarchive };
}
