#!/usr/bin/env node
/**
 * `petrel`: the one executable. Each subcommand lives in its own module.
 */
import { Command } from 'commander';
import { fetcherCommand } from './fetcher-command.js';
import { btreeCommand } from './btree-command.js';
import { crawlCommand } from './crawl-command.js';
import { dbCommand } from './db-command.js';
import { exportCommand } from './export-command.js';
import { indexCommand, searchCommand } from './index-command.js';
import { packageVersion } from './options.js';
import { queueServerCommand } from './queue-server-command.js';
import { startCommand } from './start-command.js';

const version = packageVersion();
const program = new Command('petrel')
  .description('Petrel: a polite, incremental web crawler. One queue server owns the crawl; N fetchers download over HTTP.')
  .version(version)
  .showHelpAfterError('(run with --help for usage)')
  .addCommand(startCommand())
  .addCommand(crawlCommand())
  .addCommand(queueServerCommand())
  .addCommand(fetcherCommand(version))
  .addCommand(exportCommand())
  .addCommand(btreeCommand())
  .addCommand(dbCommand())
  .addCommand(indexCommand())
  .addCommand(searchCommand());

await program.parseAsync(process.argv);
