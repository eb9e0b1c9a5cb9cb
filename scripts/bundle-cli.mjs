/**
 * The last step of `npm run build`: bundles the compiled `petrel` executable (dist/cli/petrel.js, as tsc
 * wrote it) with its dependencies into dist/cli/petrel.js plus one chunk per lazily loaded command
 * (dist/cli/petrel-*.js), with rolldown.
 *
 * Why: every `petrel crawl` starts three or more Node processes, and each spent most of its start-up
 * resolving, reading and compiling some 400 module files (zod alone is 95, undici's CommonJS about 100).
 * One file per command cuts a fetcher's CPU from spawn to its first claim by about a third (measured with
 * the bench, see scripts/bench-crawl/README.md); Node 20 has no module compile cache to do it instead
 * (`module.enableCompileCache` arrived in Node 22.1).
 *
 * What stays as it was: tsc's output beside the bundle (tests import the TypeScript sources, the scripts
 * in dist/scripts/ import dist/ modules), node_modules at run time for what is read as files (uPlot for
 * the admin page, through require.resolve), and paths taken from import.meta.url: the chunks sit in
 * dist/cli/, so `./petrel.js` (children.ts) and `../../package.json` (options.ts) resolve as before, and
 * the admin page's static files are copied to dist/cli/static/ as well (admin/routes.ts looks for
 * `./static/` beside its module).
 */
import { cpSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'cli');
const out = mkdtempSync(join(root, 'dist', '.bundle-'));
try {
  await build({
    input: join(cli, 'petrel.js'),
    platform: 'node',
    logLevel: 'warn',
    // Big data modules stay in node_modules and are read when required: iconv-lite's tables (about
    // 600 KB of the admin page's body parser, which loads them only for a non-UTF-8 body) and mime-db
    // (200 KB, which Node parses faster as the JSON file it is than as JavaScript in a chunk).
    external: ['iconv-lite', 'mime-db'],
    output: {
      dir: out,
      format: 'esm',
      entryFileNames: 'petrel.js',
      chunkFileNames: 'petrel-[name]-[hash].js',
      sourcemap: true,
    },
  });
  for (const file of readdirSync(out)) renameSync(join(out, file), join(cli, file));
  cpSync(join(root, 'queue-server', 'admin', 'static'), join(cli, 'static'), { recursive: true });
} finally {
  rmSync(out, { recursive: true, force: true });
}
