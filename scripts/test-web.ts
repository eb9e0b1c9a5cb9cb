/**
 * The Petrel test web: a deterministic generated web on loopback addresses, the fixture for every crawl
 * test and benchmark. See scripts/test-web/README.md for the map of hosts and paths.
 *
 *   import { startTestWeb } from './test-web.js';
 *   const web = await startTestWeb({ pagesPerHost: 30 });
 *   ... crawl web.seeds, compare with web.model.reachable(...) and web.log ...
 *   web.setGeneration(1);   // some pages change, vanish, redirect, fail, or copy others: web.model.changes(1)
 *   ... recrawl ...
 *   await web.close();
 *
 * Run directly, it is a CLI: `node dist/scripts/test-web.js --help`.
 */
import { pathToFileURL } from 'node:url';
import { runCli } from './test-web/cli.js';

export { canonicalUrl } from './test-web/canonical.js';
export type { HostRole } from './test-web/hosts.js';
export type { TestWebOptions } from './test-web/options.js';
export type { RequestLogEntry } from './test-web/request-log.js';
export type { ModelLink, ModelPage, PageText, SiteModel } from './test-web/site-model.js';
export type { GenerationChanges } from './test-web/generations.js';
export type { ReachableOptions } from './test-web/reachable.js';
export { startTestWeb, type TestWeb } from './test-web/start.js';
export { PETREL_AGENT } from './test-web/robots.js';

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  runCli(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`test-web: ${error instanceof Error ? error.message : String(error)}\nRun with --help for usage.\n`);
    process.exitCode = 1;
  });
}
