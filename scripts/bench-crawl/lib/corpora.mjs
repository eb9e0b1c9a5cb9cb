/**
 * The corpora the crawlers are compared on: the project's generated test web, and real documentation
 * sites from Debian packages served by nginx on loopback (lib/nginx.mjs, lib/nginx-site.mjs).
 *
 * The real sites were picked by walking their files (lib/link-walk.mjs), from /index.html:
 *   small     postgresql-doc-15  1,169 pages, all HTML, 13.5 KB on average (the PostgreSQL 15 manual)
 *   large     rust-doc          21,635 pages, all HTML, 20.8 KB on average, 12 over 2 MiB (std, core,
 *                                the books, source views); 28 links to files the package does not ship
 *   bigpages  python3.11-doc       527 pages, 94 KB on average (Sphinx; not in the default set)
 * python3.11-doc was the first idea for the small site, but its pages are seven times larger than the
 * 14 KB the goals are stated for, and its "Show Source" links point off the site.
 *
 * Each real corpus listens on its own loopback address, well above the test web's 127.0.0.2 and up.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { walkSite } from './link-walk.mjs';

export const CORPORA = {
  testweb: { name: 'testweb', kind: 'testweb', description: "the project's generated test web (profile bench: ~14 KB pages, several hosts)" },
  small: { name: 'small', kind: 'nginx', debianPackage: 'postgresql-doc-15', root: '/usr/share/doc/postgresql-doc-15/html', ip: '127.0.0.101', description: 'PostgreSQL 15 manual (postgresql-doc-15): ~1,170 pages of ~13 KB' },
  large: { name: 'large', kind: 'nginx', debianPackage: 'rust-doc', root: '/usr/share/doc/rust-doc/html', ip: '127.0.0.102', description: 'Rust 1.63 documentation (rust-doc): ~21,600 pages of ~21 KB' },
  bigpages: { name: 'bigpages', kind: 'nginx', debianPackage: 'python3.11-doc', root: '/usr/share/doc/python3.11/html', ip: '127.0.0.103', description: 'Python 3.11 documentation (python3.11-doc): ~530 pages of ~94 KB' },
};

export const DEFAULT_CORPORA = ['testweb', 'small', 'large'];

/** Debian packages that are not installed (dpkg's view), of those given. */
export function missingPackages(packages) {
  return packages.filter((pkg) => {
    const out = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
    return out.status !== 0 || !out.stdout.includes('install ok installed');
  });
}

export function packageVersion(pkg) {
  const out = spawnSync('dpkg-query', ['-W', '-f=${Version}', pkg], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.trim() : null;
}

/**
 * Installs the missing packages with apt-get, saying so. Refuses when services could start on install
 * (no /usr/sbin/policy-rc.d that exits 101): the benchmark starts its own nginx, never the system one.
 */
export function installPackages(packages, say) {
  if (packages.length === 0) return;
  const command = ['apt-get', 'install', '-y', '-o', 'DPkg::Lock::Timeout=600', ...packages];
  if (process.getuid?.() !== 0) throw new Error(`missing Debian packages: ${packages.join(' ')}; as root: ${command.join(' ')}`);
  const policy = spawnSync('/usr/sbin/policy-rc.d', [], { encoding: 'utf8' });
  if (policy.status !== 101) {
    throw new Error(`missing Debian packages: ${packages.join(' ')}. Not installing them here: without a /usr/sbin/policy-rc.d that exits 101, apt would start nginx's system service. Install them yourself: ${command.join(' ')}`);
  }
  say(`installing missing Debian packages: ${command.join(' ')}`);
  const result = spawnSync(command[0], command.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) throw new Error(`${command.join(' ')} failed (status ${result.status})`);
}

/**
 * The reachable pages of a real corpus (a Set of pageKey()s) and what the walk saw, cached in
 * `cacheDir` by package version and walker source, since walking rust-doc takes most of a minute.
 * The walk does not depend on the port: absolute links to the benchmark's own address do not occur.
 */
export function reachablePages(corpus, cacheDir, say) {
  const walker = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'link-walk.mjs'));
  const version = packageVersion(corpus.debianPackage);
  const key = createHash('sha256').update(walker).update(`${corpus.root}\0${corpus.debianPackage}\0${version}`).digest('hex').slice(0, 16);
  const file = join(cacheDir, `reachable-${corpus.name}-${key}.json`);
  if (existsSync(file)) {
    const cached = JSON.parse(readFileSync(file, 'utf8'));
    return { ...cached.stats, keys: new Set(cached.keys), cached: file };
  }
  say(`${corpus.name}: walking ${corpus.root} for the pages reachable from /index.html (cached afterwards)...`);
  const started = performance.now();
  const origin = `http://${corpus.ip}:9`;
  const walk = walkSite({ root: corpus.root, origin, seeds: [`${origin}/index.html`] });
  const values = [...walk.pages.values()];
  const html = values.filter((page) => page.html);
  const stats = {
    debianPackage: corpus.debianPackage,
    version,
    pages: walk.pages.size,
    htmlPages: html.length,
    htmlMeanKb: html.length === 0 ? 0 : html.reduce((sum, page) => sum + page.bytes, 0) / html.length / 1024,
    htmlMedianKb: html.length === 0 ? 0 : median(html.map((page) => page.bytes)) / 1024,
    totalMb: values.reduce((sum, page) => sum + page.bytes, 0) / 1024 / 1024,
    pagesOver2MiB: values.filter((page) => page.bytes > 2 * 1024 * 1024).length,
    linksFollowed: walk.links,
    redirects: walk.redirects,
    notFound: walk.notFound,
    forbidden: walk.forbidden,
    nofollowLinksOnSite: walk.nofollowLinks,
    walkMs: performance.now() - started,
  };
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ stats, keys: [...walk.pages.keys()] })}\n`);
  return { ...stats, keys: new Set(walk.pages.keys()), cached: null };
}

function median(numbers) {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
