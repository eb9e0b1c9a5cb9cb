/**
 * A brute-force model of the search index for tests: it keeps what was committed per URL and answers
 * a parsed query by scanning every page, with the semantics the index promises (search-index.ts,
 * evaluate.ts): all words somewhere in a page or the anchor text that counts for it, phrases in one
 * field of one doc, exclusions, site: and lang:, only live pages.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach } from 'vitest';
import { positionsOf, type AnchorTerms, type IndexData } from '../../shared/index-data.js';
import { termOf } from '../../shared/tokenize.js';
import type { IndexChange } from '../../queue-server/search/search-index.js';
import type { Clause, ParsedQuery } from '../../queue-server/search/query-parser.js';
import { primaryLanguage } from '../../queue-server/search/meta-terms.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory removed after the current test. */
export function tempDir(prefix = 'petrel-index-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

type Entry =
  | { kind: 'page'; url: string; data: IndexData }
  | { kind: 'noindex'; url: string; anchors: readonly AnchorTerms[] }
  | { kind: 'duplicate'; url: string; originalUrl: string; anchors: readonly AnchorTerms[] };

export class SearchModel {
  readonly #committed = new Map<string, Entry>();
  readonly #staged = new Map<string, Entry | null>();

  stage(change: IndexChange): void {
    this.#staged.set(change.url, change.kind === 'remove' ? null : change);
  }

  commit(): void {
    for (const [url, entry] of this.#staged) {
      if (entry === null) this.#committed.delete(url);
      else this.#committed.set(url, entry);
    }
    this.#staged.clear();
  }

  /** Drops what was staged and not committed (a crash). */
  rollback(): void {
    this.#staged.clear();
  }

  livePages(): string[] {
    return [...this.#committed.values()].filter((e) => e.kind === 'page').map((e) => e.url).sort();
  }

  /** Anchor docs (term sequences) that count for `url`: inlinks to it and to its duplicates. */
  #anchorDocs(url: string): string[][] {
    const docs: string[][] = [];
    for (const entry of this.#committed.values()) {
      const anchors = entry.kind === 'page' ? entry.data.anchors : entry.anchors;
      for (const anchor of anchors) {
        if (anchor.url === entry.url) continue;
        const target = this.#committed.get(anchor.url);
        const countsFor = target?.kind === 'duplicate' ? target.originalUrl : anchor.url;
        if (countsFor === url) docs.push([...anchor.terms]);
      }
    }
    return docs;
  }

  /** URLs of the live pages matching the query, sorted. `stemmer` expands words as the index does. */
  matching(query: ParsedQuery, stemmer = 'english'): string[] {
    const out: string[] = [];
    for (const entry of this.#committed.values()) {
      if (entry.kind !== 'page') continue;
      const fields = fieldSequences(entry.data);
      const anchors = this.#anchorDocs(entry.url);
      const docs = [...fields, ...anchors];
      const has = (clause: Clause): boolean => {
        if (clause.kind === 'site') {
          const host = new URL(entry.url).hostname;
          return host === clause.host || host.endsWith(`.${clause.host}`);
        }
        if (clause.kind === 'lang') return primaryLanguage(entry.data.language) === clause.language;
        const words = (clause.kind === 'word' ? [clause.word] : clause.words).map((w) => termOf(w, stemmer));
        return docs.some((doc) => containsPhrase(doc, words));
      };
      if (query.required.every(has) && !query.excluded.some(has)) out.push(entry.url);
    }
    return out.sort();
  }
}

/** A page's fields as sparse position → term arrays (headings keep their gaps). */
function fieldSequences(data: IndexData): Array<Array<string | undefined>> {
  return (['title', 'heading', 'body'] as const).map((field) => {
    const seq: Array<string | undefined> = [];
    for (const entry of data.fields[field]) for (const p of positionsOf(entry)) seq[p] = entry[0];
    return seq;
  });
}

function containsPhrase(doc: ReadonlyArray<string | undefined>, words: readonly string[]): boolean {
  outer: for (let p = 0; p + words.length <= doc.length; p++) {
    for (let i = 0; i < words.length; i++) if (doc[p + i] !== words[i]) continue outer;
    return true;
  }
  return false;
}
