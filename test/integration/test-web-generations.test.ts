/**
 * Generations of the test web: a recrawl test switches the web to generation 1 and judges the crawler
 * by `model.changes(1)`. So the changes must be what the ground truth says (served bytes, statuses,
 * validators), every generation-0 page must stay findable, and generation 0 must stay exactly as it was.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { canonicalUrl, startTestWeb, type GenerationChanges, type TestWeb } from '../../scripts/test-web.js';
import { NEAR_COPY_WORDS } from '../../scripts/test-web/generations.js';
import { nodePath } from '../../scripts/test-web/graph.js';
import { planHosts, type Profile } from '../../scripts/test-web/hosts.js';
import { prepareResponse } from '../../scripts/test-web/response.js';
import { createSiteModel } from '../../scripts/test-web/site-model.js';
import { buildWeb, type Web } from '../../scripts/test-web/web.js';

const GENERATION_0_DATE = 'Mon, 01 Jan 2024 00:00:00 GMT';

interface Fetched {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function get(url: string, opts: { method?: 'GET' | 'HEAD'; headers?: Record<string, string> } = {}): Promise<Fetched> {
  const res = await request(url, { method: opts.method ?? 'GET', headers: opts.headers ?? {} });
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

function header(res: Fetched, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A web built for port 8080 without listening: the same bytes the server would send there. */
function offlineWeb(opts: { pagesPerHost: number; hosts: number; profile?: Profile }): Web {
  const profile = opts.profile ?? 'full';
  return buildWeb(planHosts({ normalHosts: opts.hosts, profile }), 8080, { profile, pagesPerHost: opts.pagesPerHost, slowMs: 0, crawlDelaySeconds: 1 });
}

function offlineResponse(web: Web, url: string, generation: number): ReturnType<typeof prepareResponse> {
  const located = web.locate(url);
  if (located === null) throw new Error(`not on the test web: ${url}`);
  return prepareResponse(located.host.site.resolve(located.pathAndQuery, generation), located.host.cache);
}

function generatedUrls(origin: string, pagesPerHost: number): string[] {
  const urls: string[] = [];
  for (let node = 1; node < pagesPerHost; node++) urls.push(`${origin}${nodePath(node)}`);
  return urls;
}

function normalOrigins(web: Web): string[] {
  return web.hosts.filter((host) => host.plan.kind.kind === 'normal').map((host) => host.origin);
}

/** Every URL a category list names as changed or unchanged, each category by name. */
function categories(changes: GenerationChanges): Record<string, string[]> {
  return {
    changedText: changes.changedText,
    gone404: changes.gone404,
    gone410: changes.gone410,
    redirected: changes.redirected.map((entry) => entry.url),
    flaky: changes.flaky.map((entry) => entry.url),
    exactCopies: changes.exactCopies.map((entry) => entry.url),
    nearCopies: changes.nearCopies.map((entry) => entry.url),
    unchanged: changes.unchanged,
  };
}

/** Words of the visible text, tags dropped: what a near-duplicate detector compares. */
function words(html: string): string[] {
  return html.replace(/<[^>]*>/g, ' ').toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

/** Charikar's simhash over word 3-shingles with 64-bit FNV-1a, written independently of the test web. */
function simhash(html: string): bigint {
  const tokens = words(html);
  const sums = new Array<number>(64).fill(0);
  for (let i = 0; i + 3 <= tokens.length; i++) {
    let hash = 0xcbf29ce484222325n;
    for (const byte of Buffer.from(tokens.slice(i, i + 3).join(' '))) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
    for (let bit = 0; bit < 64; bit++) sums[bit] = (sums[bit] ?? 0) + ((hash >> BigInt(bit)) & 1n ? 1 : -1);
  }
  let out = 0n;
  sums.forEach((sum, bit) => {
    if (sum > 0) out |= 1n << BigInt(bit);
  });
  return out;
}

function hamming(a: bigint, b: bigint): number {
  let diff = a ^ b;
  let count = 0;
  for (; diff !== 0n; diff >>= 1n) count += Number(diff & 1n);
  return count;
}

describe('generations, the model', () => {
  it('splits every normal host\'s generated pages into disjoint categories, each non-empty, a tenth with new text', () => {
    for (let pagesPerHost = 20; pagesPerHost <= 260; pagesPerHost++) {
      const web = offlineWeb({ pagesPerHost, hosts: 3 });
      const changes = createSiteModel(web).changes(1);
      for (const origin of normalOrigins(web)) {
        const byCategory = Object.entries(categories(changes)).map(([name, urls]) => [name, urls.filter((url) => url.startsWith(`${origin}/`))] as const);
        for (const [name, urls] of byCategory) expect(urls.length, `${name} on ${origin}, pagesPerHost ${pagesPerHost}`).toBeGreaterThan(0);
        // Disjoint and complete: every generated content page exactly once, never the index.
        expect(byCategory.flatMap(([, urls]) => urls).sort()).toEqual(generatedUrls(origin, pagesPerHost).sort());
        const changedText = byCategory.find(([name]) => name === 'changedText')?.[1] ?? [];
        expect(changedText.every((url) => url.endsWith('/page-3.html'))).toBe(true);
        expect(changedText).toHaveLength(Math.floor((pagesPerHost - 1 + 7) / 10));
        if ((pagesPerHost - 1) % 10 === 0) expect(changedText.length * 10).toBe(pagesPerHost - 1);
        // The special categories stay a small share of a large host.
        const special = byCategory.filter(([name]) => name !== 'changedText' && name !== 'unchanged').flatMap(([, urls]) => urls);
        if (pagesPerHost >= 100) expect(special.length / (pagesPerHost - 1)).toBeLessThan(0.1);
      }
    }
  });

  it('lists nothing for generation 0, and generations after 1 repeat generation 1', () => {
    const web = offlineWeb({ pagesPerHost: 41, hosts: 2 });
    const model = createSiteModel(web);
    const zero = model.changes(0);
    expect(zero.unchanged).toHaveLength(80);
    expect({ ...zero, unchanged: [] }).toEqual({ changedText: [], gone404: [], gone410: [], redirected: [], flaky: [], exactCopies: [], nearCopies: [], unchanged: [] });
    expect(model.changes(2)).toEqual(model.changes(1));
    expect(model.changes(7)).toEqual(model.changes(1));
    for (const url of model.changes(1).changedText) expect(offlineResponse(web, url, 5).body.equals(offlineResponse(web, url, 1).body)).toBe(true);
  });

  it('points redirects and copies at unchanged pages of the same host (copies within their own directory)', () => {
    const changes = createSiteModel(offlineWeb({ pagesPerHost: 250, hosts: 3 })).changes(1);
    const unchanged = new Set(changes.unchanged);
    const directory = (url: string): string => url.slice(0, url.lastIndexOf('/') + 1);
    for (const { url, to } of changes.redirected) {
      expect(unchanged.has(to), to).toBe(true);
      expect(new URL(to).origin).toBe(new URL(url).origin);
    }
    for (const { url, of } of [...changes.exactCopies, ...changes.nearCopies]) {
      expect(unchanged.has(of), of).toBe(true);
      expect(directory(of)).toBe(directory(url));
    }
    for (const { failures } of changes.flaky) expect(failures).toBe(2);
  });

  it('keeps every generation-0 page reachable from the seeds in generation 1, and makes no new URL reachable', () => {
    for (const pagesPerHost of [1, 2, 9, 10, 11, 18, 20, 30, 41, 64, 100, 257]) {
      const web = offlineWeb({ pagesPerHost, hosts: 3 });
      const origins = normalOrigins(web);
      const seeds = [`${origins[0]}/index.html`];
      const inScope = (url: string): boolean => origins.some((origin) => url.startsWith(`${origin}/`));
      let generation = 0;
      const model = createSiteModel(web, { generation: () => generation });
      const before = model.reachable({ seeds, inScope, maxDepth: 100 });
      generation = 1;
      const after = model.reachable({ seeds, inScope, maxDepth: 100 });
      const changes = model.changes(1);
      for (const origin of origins) {
        for (const url of [`${origin}/index.html`, ...generatedUrls(origin, pagesPerHost)]) {
          expect(before.has(url), url).toBe(true);
          expect(after.has(url), `${url} in generation 1, pagesPerHost ${pagesPerHost}`).toBe(true);
        }
      }
      // The model describes the current generation; flaky pages as they answer once recovered.
      for (const url of changes.gone404) expect(model.page(url)?.status).toBe(404);
      for (const url of changes.gone410) expect(model.page(url)?.status).toBe(410);
      for (const { url, to } of changes.redirected) expect(model.page(url)).toMatchObject({ status: 301, redirectTo: to });
      for (const { url } of changes.flaky) expect(model.page(url)?.status).toBe(200);
      // Redirect targets are new edges; nothing else is reachable that was not before.
      const added = [...after.keys()].filter((url) => !before.has(url));
      expect(added).toEqual([]);
    }
  });

  it('leaves generation 0 byte for byte as it was before generations existed', () => {
    // Recorded from the code before generations were added: sha256 of each response's status, headers
    // and body, folded over every normal host's robots.txt, index and generated pages at port 8080.
    // Re-recorded since, on purpose: the main index links to /evil.html (the admin page's test), to the
    // two X-Robots-Tag pages (/meta/x-robots-none.html, /meta/x-robots-other-bot.html), and to
    // /markup/text.html, /lang/zh.html, /lang/ja.html and /anchor/target.html (the search tests), and
    // to /meta/noarchive.html and /meta/x-robots-noarchive.html (the public cached copies' test).
    const fingerprint = (web: Web, pagesPerHost: number): string => {
      const urls = normalOrigins(web).flatMap((origin) => [`${origin}/robots.txt`, `${origin}/index.html`, ...generatedUrls(origin, pagesPerHost)]).sort();
      const all = createHash('sha256');
      for (const url of urls) {
        const res = offlineResponse(web, url, 0);
        const one = createHash('sha256').update(JSON.stringify([res.status, res.headers, res.delayMs])).update(res.body).digest('hex');
        all.update(`${url} ${one}\n`);
      }
      return all.digest('hex');
    };
    expect(fingerprint(offlineWeb({ pagesPerHost: 30, hosts: 3 }), 30)).toBe('28560daaa33df6b7973db116bd79a7607706ac0c20cbc6193e50bab0a45b0c30');
    expect(fingerprint(offlineWeb({ pagesPerHost: 40, hosts: 2, profile: 'bench' }), 40)).toBe('7ecb585a6ec0fcc35d71acc77e2f3fbc1fc80056d8cac65f5491906b2d4fa613');
    const web = offlineWeb({ pagesPerHost: 30, hosts: 3 });
    const bodies: Record<string, string> = {
      'http://127.0.0.2:8080/index.html': '5d031df29072adfc05369380990418bc5231d6262d209cc3497922de237ca2ba',
      'http://127.0.0.2:8080/section-1/page-3.html': '28527466f184cfd35d0d5fb882c5e479ccaf199db2a95fe59c8a09335e1d6983',
      'http://127.0.0.3:8080/section-3/page-4.html': '67e94e51749348864700d5cec347ea3a41fe33e30dc9a70ee794379cde55b018',
      'http://127.0.0.4:8080/section-3/page-9.html': '64d1770272d99b54e5175ecf74633ae507ec86acc409814f24f9c62c761d31cc',
      'http://127.0.0.2:8080/section-3/page-7.html': '932c7878801267b25993201deacf26c7b8a3d82889b9a0a6c9e3ebbf169dc0f9',
    };
    for (const [url, sha] of Object.entries(bodies)) expect(createHash('sha256').update(offlineResponse(web, url, 0).body).digest('hex'), url).toBe(sha);
  });
});

describe('generations, served', () => {
  const PAGES_PER_HOST = 41;
  let web: TestWeb;
  let changes: GenerationChanges;
  /** Generation-0 responses of every generated page and index, by URL. */
  const original = new Map<string, Fetched>();
  let allPages: string[];

  beforeAll(async () => {
    web = await startTestWeb({ pagesPerHost: PAGES_PER_HOST, slowMs: 0 });
    changes = web.model.changes(1);
    allPages = web.origins.slice(0, 3).flatMap((origin) => [`${origin}/index.html`, ...generatedUrls(origin, PAGES_PER_HOST)]);
    for (const url of allPages) original.set(url, await get(url));
  });
  afterAll(async () => {
    await web.close();
  });
  beforeEach(() => {
    web.setGeneration(0);
  });

  const body = (url: string): Buffer => original.get(url)?.body ?? Buffer.alloc(0);
  const etag = (url: string): string => header(original.get(url) ?? { status: 0, headers: {}, body: Buffer.alloc(0) }, 'etag') ?? '';

  it('starts at generation 0, switches on assignment or setGeneration, and rejects non-integers', () => {
    expect(web.generation).toBe(0);
    web.setGeneration(1);
    expect(web.generation).toBe(1);
    web.generation = 0;
    expect(web.generation).toBe(0);
    expect(() => web.setGeneration(-1)).toThrow(RangeError);
    expect(() => web.setGeneration(1.5)).toThrow(/generation/);
    expect(web.generation).toBe(0);
  });

  it('serves every category in generation 1 as model.changes(1) and model.page() say', async () => {
    expect(changes.changedText).toHaveLength(12);
    web.setGeneration(1);
    for (const url of changes.unchanged) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(res.body.equals(body(url)), url).toBe(true);
    }
    for (const url of web.origins.slice(0, 3).map((origin) => `${origin}/index.html`)) expect((await get(url)).body.equals(body(url)), url).toBe(true);
    for (const url of changes.changedText) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(res.body.equals(body(url)), url).toBe(false);
      expect(header(res, 'etag'), url).not.toBe(etag(url));
      expect(Date.parse(header(res, 'last-modified') ?? '')).toBeGreaterThan(Date.parse(GENERATION_0_DATE));
      // Same title and links, different prose.
      expect(/<title>[^<]*<\/title>/.exec(res.body.toString())?.[0]).toBe(/<title>[^<]*<\/title>/.exec(body(url).toString())?.[0]);
      expect(res.body.toString().match(/<a [^>]*>/g)).toEqual(body(url).toString().match(/<a [^>]*>/g));
    }
    for (const [status, urls] of [[404, changes.gone404], [410, changes.gone410]] as const) {
      for (const url of urls) {
        const res = await get(url);
        expect(res.status, url).toBe(status);
        expect(header(res, 'etag')).toBeUndefined();
        expect(web.model.page(url)?.status).toBe(status);
      }
    }
    for (const { url, to } of changes.redirected) {
      const res = await get(url);
      expect(res.status, url).toBe(301);
      expect(canonicalUrl(header(res, 'location') ?? '', url)).toBe(to);
      expect(web.model.page(url)).toMatchObject({ status: 301, redirectTo: to });
      const target = await get(to);
      expect(target.status).toBe(200);
      expect(target.body.equals(body(to))).toBe(true);
    }
    for (const { url, of } of changes.exactCopies) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(res.body.equals(body(of)), url).toBe(true);
      expect(header(res, 'etag')).toBe(etag(of));
      expect(Date.parse(header(res, 'last-modified') ?? '')).toBeGreaterThan(Date.parse(GENERATION_0_DATE));
      expect(web.model.page(url)?.title).toBe(web.model.page(of)?.title);
    }
    for (const { url, of } of changes.nearCopies) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(header(res, 'etag')).not.toBe(etag(of));
      const copy = words(res.body.toString());
      const source = words(body(of).toString());
      expect(copy).toHaveLength(source.length);
      expect(copy.filter((word, i) => word !== source[i])).toHaveLength(NEAR_COPY_WORDS);
      // Near duplicates to a 64-bit simhash: closer to their source than any unchanged page of the host.
      const distance = hamming(simhash(res.body.toString()), simhash(body(of).toString()));
      expect(distance, url).toBeLessThanOrEqual(6);
      const others = changes.unchanged.filter((other) => other !== of && other.startsWith(new URL(url).origin));
      const nearestOther = Math.min(...others.map((other) => hamming(simhash(body(other).toString()), simhash(body(of).toString()))));
      expect(distance, url).toBeLessThan(nearestOther);
    }
    for (const { url, failures } of changes.flaky) {
      const statuses: number[] = [];
      for (let i = 0; i < failures + 2; i++) statuses.push((await get(url)).status);
      expect(statuses, url).toEqual([500, 500, 200, 200]);
      expect((await get(url)).body.equals(body(url))).toBe(true);
      expect(web.model.page(url)?.status).toBe(200);
    }
  });

  it('counts a flaky page\'s failures per URL from setGeneration(), HEAD and conditional requests included', async () => {
    const [first, second] = changes.flaky.map((entry) => entry.url);
    if (first === undefined || second === undefined) throw new Error('expected flaky pages');
    web.setGeneration(1);
    expect((await get(first, { method: 'HEAD' })).status).toBe(500);
    expect((await get(first, { headers: { 'if-none-match': etag(first) } })).status).toBe(500);
    expect((await get(first, { headers: { 'if-none-match': etag(first) } })).status).toBe(304);
    expect((await get(second)).status).toBe(500);
    web.setGeneration(1);
    expect((await get(first)).status).toBe(500);
    web.setGeneration(2);
    expect((await get(first)).status).toBe(500);
    expect((await get(first)).status).toBe(500);
    expect((await get(first)).status).toBe(200);
    web.setGeneration(0);
    expect((await get(second)).status).toBe(200);
  });

  it('answers generation-0 validators with 304 for unchanged pages and 200 with the new body for changed ones', async () => {
    web.setGeneration(1);
    // Flaky pages spend their failures first; afterwards they are unchanged.
    for (const { url, failures } of changes.flaky) for (let i = 0; i < failures; i++) await get(url);
    const unchanged = [...changes.unchanged, ...changes.flaky.map((entry) => entry.url)];
    const changed = [...changes.changedText, ...changes.exactCopies.map((entry) => entry.url), ...changes.nearCopies.map((entry) => entry.url)];
    const generation0Validators = (url: string): Record<string, string>[] => [{ 'if-none-match': etag(url) }, { 'if-modified-since': GENERATION_0_DATE }];
    const cacheOf = (url: string): Record<string, string | undefined> => {
      const index = web.origins.indexOf(new URL(url).origin);
      return [{ 'cache-control': 'max-age=3600' }, { 'cache-control': 'max-age=0' }, { 'cache-control': undefined }][index] ?? {};
    };
    for (const url of unchanged) {
      for (const headers of generation0Validators(url)) {
        const res = await get(url, { headers });
        expect(res.status, `${url} ${JSON.stringify(headers)}`).toBe(304);
        expect(header(res, 'etag')).toBe(etag(url));
        expect(header(res, 'cache-control')).toBe(cacheOf(url)['cache-control']);
      }
    }
    for (const url of changed) {
      for (const headers of generation0Validators(url)) {
        const res = await get(url, { headers });
        expect(res.status, `${url} ${JSON.stringify(headers)}`).toBe(200);
        expect(res.body.equals(body(url)), url).toBe(false);
        expect(res.body.length).toBe(Number(header(res, 'content-length')));
        expect(header(res, 'cache-control')).toBe(cacheOf(url)['cache-control']);
        if (cacheOf(url)['cache-control'] === undefined) expect(Date.parse(header(res, 'expires') ?? '')).toBeLessThan(Date.now());
      }
      // And the generation-1 validators revalidate in generation 1.
      const now = await get(url);
      expect((await get(url, { headers: { 'if-none-match': header(now, 'etag') ?? '' } })).status).toBe(304);
      expect((await get(url, { headers: { 'if-modified-since': header(now, 'last-modified') ?? '' } })).status).toBe(304);
    }
    // Preconditions only apply to what would be a 200 (RFC 9110 §13.2.1).
    const others: [number, string[]][] = [[404, changes.gone404], [410, changes.gone410], [301, changes.redirected.map((entry) => entry.url)]];
    for (const [status, urls] of others) {
      for (const url of urls) expect((await get(url, { headers: { 'if-none-match': etag(url) } })).status, url).toBe(status);
    }
  });

  it('restores every page byte for byte when switched back to generation 0', async () => {
    web.setGeneration(1);
    for (const url of allPages) await get(url);
    web.setGeneration(0);
    for (const url of allPages) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(res.body.equals(body(url)), url).toBe(true);
      expect(header(res, 'last-modified')).toBe(GENERATION_0_DATE);
      expect((await get(url, { headers: { 'if-none-match': etag(url) } })).status, url).toBe(304);
    }
    for (const url of changes.gone404) expect(web.model.page(url)?.status).toBe(200);
  });

  it('finds every generation-0 page again in a generation-1 recrawl, by model.reachable()', () => {
    web.setGeneration(1);
    const reach = web.model.reachable({ seeds: web.seeds, inScope: () => true, maxDepth: 8 });
    for (const url of allPages) expect(reach.has(url), url).toBe(true);
    expect(reach.has(`${web.hostByRole.main}/redirect/end.html`)).toBe(true);
  });
});
