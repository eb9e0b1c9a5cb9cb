/**
 * The pages quality.mjs ranks, from a real crawl: nginx serves a Debian documentation package on
 * loopback (the performance benchmark's corpora, ../bench-crawl/lib/corpora.mjs), `petrel crawl`
 * crawls it with the web archive on, and the latest capture of every page answered 200 as HTML is read
 * back from `petrel export --format warc` and extracted with the fetcher's own extractor
 * (fetcher/html-extract.ts): title, headings, visible text and the anchor text of each outlink. Each
 * page's link authority is its OPIC cash in the crawl database (the `score` the search ranks with).
 *
 *   npm run build && node scripts/bench-index/crawl-pages.mjs [--corpus small] [--order bfs|opic] [--out DIR]
 *
 * `--order` is the crawl's (`petrel crawl --order`, default bfs): with bfs a URL's cash is the share of the
 * page that found it first, with opic it also gets a share from every page that links to it later.
 * Writes DIR/pages.jsonl and DIR/authority.json (default DIR: out/crawl-pages-CORPUS, out/crawl-pages-CORPUS-opic
 * with --order opic), the inputs of
 *   node scripts/bench-index/quality.mjs --pages DIR/pages.jsonl --authority DIR/authority.json --queries queries/postgresql-15.json
 * Nothing is fetched beyond loopback: nginx listens on the corpus's 127.x address and the crawl's scope is
 * that host.
 */
import { spawn } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { CORPORA } from '../bench-crawl/lib/corpora.mjs';
import { startNginx } from '../bench-crawl/lib/nginx.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dist = (path) => import(pathToFileURL(join(root, 'dist', path)).href);
const { walkMembers, readAt, parseRecord, warcField } = await dist('queue-server/warc/warc-file.js');
const { extractPage } = await dist('fetcher/html-extract.js');
const { CrawlDb } = await dist('queue-server/crawldb/crawl-db.js');
const { urlHash } = await dist('shared/url-hash.js');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const corpus = CORPORA[option('corpus', 'small')];
if (corpus === undefined || corpus.kind !== 'nginx') {
  process.stderr.write(`usage: node crawl-pages.mjs [--corpus ${Object.values(CORPORA).filter((c) => c.kind === 'nginx').map((c) => c.name).join('|')}] [--out DIR]\n`);
  process.exit(2);
}
if (!existsSync(corpus.root)) {
  process.stderr.write(`crawl-pages: ${corpus.root} is missing: apt-get install -y ${corpus.debianPackage}\n`);
  process.exit(1);
}
const order = option('order', 'bfs');
if (order !== 'bfs' && order !== 'opic') {
  process.stderr.write(`crawl-pages: --order is bfs or opic, got ${order}\n`);
  process.exit(2);
}
const out = resolve(option('out', join(fileURLToPath(new URL('.', import.meta.url)), 'out', `crawl-pages-${corpus.name}${order === 'bfs' ? '' : `-${order}`}`)));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const dataDir = join(out, 'data');
const petrel = join(root, 'dist/cli/petrel.js');

const nginx = await startNginx({ root: corpus.root, ip: corpus.ip, dir: join(out, 'nginx'), expiresS: 0 });
try {
  const started = Date.now();
  await run([petrel, 'crawl', '--seed', `${nginx.origin}/index.html`, '--data', dataDir, '--scope', 'host', '--delay-ms', '0', '--host-concurrency', '16', '--order', order, '--no-progress'], null);
  process.stderr.write(`crawl-pages: crawled ${nginx.origin} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
} finally {
  await nginx.stop();
}
const archive = join(out, 'latest.warc.gz');
await run([petrel, 'export', '--data', dataDir, '--format', 'warc'], archive);

const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
const pages = createWriteStream(join(out, 'pages.jsonl'));
const authority = {};
let count = 0;
const fd = openSync(archive, 'r');
try {
  for (const member of walkMembers(fd)) {
    const record = parseRecord(gunzipSync(readAt(fd, member.offset, member.length)), member.offset);
    if (warcField(record, 'WARC-Type') !== 'response') continue;
    const url = warcField(record, 'WARC-Target-URI');
    const http = httpMessage(record.block);
    if (url === null || http === null || http.status !== 200 || !/^text\/html\b/i.test(http.headers.get('content-type') ?? '')) continue;
    const { page, indexSource } = extractPage(http.body.toString('utf8'), url);
    pages.write(`${JSON.stringify({ url, title: page.title ?? '', headings: indexSource.headings, body: indexSource.bodyText, anchors: indexSource.anchors })}\n`);
    authority[url] = crawlDb.get(urlHash(url))?.score ?? 0;
    count++;
  }
} finally {
  closeSync(fd);
  crawlDb.close();
}
await new Promise((done) => pages.end(done));
writeFileSync(join(out, 'authority.json'), `${JSON.stringify(authority)}\n`);
process.stdout.write(`${JSON.stringify({ corpus: corpus.name, pages: count, pagesFile: join(out, 'pages.jsonl'), authorityFile: join(out, 'authority.json') })}\n`);

/** Runs node with `argv`, stdout to `stdoutFile` (or inherited), failing on a non-zero exit. */
function run(argv, stdoutFile) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', stdoutFile === null ? 'inherit' : 'pipe', 'inherit'] });
    if (stdoutFile !== null) child.stdout.pipe(createWriteStream(stdoutFile));
    child.once('error', fail);
    child.once('exit', (code) => (code === 0 ? done() : fail(new Error(`${argv.slice(1, 3).join(' ')} exited with ${code}`))));
  });
}

/** Status, headers and body of a response record's block (nginx sends no content coding here). */
function httpMessage(block) {
  const end = block.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = block.toString('latin1', 0, end).split('\r\n');
  const status = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(statusLine)?.[1]);
  const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  if (headers.has('content-encoding') && headers.get('content-encoding') !== 'identity') return null;
  return { status, headers, body: block.subarray(end + 4) };
}
