#!/usr/bin/env node
/**
 * `petrel`: the one executable. Each subcommand lives in its own module, and only the one asked for is
 * loaded: a `petrel fetcher` that `petrel crawl` starts does not load the queue server's storage stack or
 * the crawl settings' schema, which was about a third of its start-up (see scripts/bench-crawl/README.md).
 * Without a known subcommand (`petrel --help`, `petrel help crawl`, a typo), every command is loaded so
 * that commander can list them, suggest one, or show one's help.
 */
import { Command } from 'commander';
import { packageVersion } from './options.js';

const COMMANDS = {
  start: async () => (await import('./start-command.js')).startCommand(),
  crawl: async () => (await import('./crawl-command.js')).crawlCommand(),
  'queue-server': async () => (await import('./queue-server-command.js')).queueServerCommand(),
  fetcher: async (version: string) => (await import('./fetcher-command.js')).fetcherCommand(version),
  export: async () => (await import('./export-command.js')).exportCommand(),
  btree: async () => (await import('./btree-command.js')).btreeCommand(),
  db: async () => (await import('./db-command.js')).dbCommand(),
} as const satisfies Record<string, (version: string) => Promise<Command>>;

type CommandName = keyof typeof COMMANDS;

const version = packageVersion();
const program = new Command('petrel')
  .description('Petrel: a polite, incremental web crawler. One queue server owns the crawl; N fetchers download over HTTP.')
  .version(version)
  .showHelpAfterError('(run with --help for usage)');

const asked = process.argv[2];
const names: CommandName[] = asked !== undefined && Object.hasOwn(COMMANDS, asked) ? [asked as CommandName] : (Object.keys(COMMANDS) as CommandName[]);
for (const command of await Promise.all(names.map((name) => COMMANDS[name](version)))) program.addCommand(command);

await program.parseAsync(process.argv);
