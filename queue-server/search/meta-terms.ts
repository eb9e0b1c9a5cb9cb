/**
 * `site:` and `lang:` as terms (Yioop's meta words): a page doc carries `\u0001site:H` for its host
 * and every parent domain of it, and `\u0001lang:xx` for its language's primary subtag. The query
 * operators become ordinary required terms matched through the same postings, with no score. The
 * leading U+0001 can never come out of the tokenizer, so no word collides with them.
 */
export const META_PREFIX = '\u0001';

export function siteTerm(host: string): string {
  return `${META_PREFIX}site:${host.toLowerCase()}`;
}

export function langTerm(primary: string): string {
  return `${META_PREFIX}lang:${primary.toLowerCase()}`;
}

/** The primary language subtag of a tag ("pt-BR" -> "pt"), or null. */
export function primaryLanguage(language: string | null): string | null {
  const primary = language === null ? undefined : /^\s*([A-Za-z]{2,3})(?:$|[-_\s])/.exec(language)?.[1];
  return primary === undefined ? null : primary.toLowerCase();
}

/** Meta terms of a page: its host and parent domains (an IP address only whole), its language. */
export function pageMetaTerms(url: string, language: string | null): string[] {
  const terms: string[] = [];
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    host = '';
  }
  if (host !== '') {
    if (/^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith('[')) terms.push(siteTerm(host));
    else {
      const labels = host.split('.');
      for (let i = 0; i < labels.length; i++) if (labels[i] !== '') terms.push(siteTerm(labels.slice(i).join('.')));
    }
  }
  const primary = primaryLanguage(language);
  if (primary !== null) terms.push(langTerm(primary));
  return terms;
}
