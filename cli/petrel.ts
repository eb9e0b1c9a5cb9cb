#!/usr/bin/env node
/**
 * `petrel`: the one executable. Each subcommand lives in its own module, and only the one asked for is
 * loaded: a `petrel fetcher` that `petrel crawl` starts does not load the queue server's storage stack or
 * the crawl settings' schema, which was about a third of its start-up (see scripts/bench-crawl/README.md).
 * Without a known subcommand (`petrel --help`, `petrel help crawl`, a typo), every command is loaded so
 * that commander can list them, suggest one, or show one's help.
 *
 * What holds for every command, set up here: usage errors (an unknown option, a bad value, a missing
 * command) exit 2 and help or --version 0 (exit-codes.ts); a closed stdout (`petrel db dump | head`)
 * ends the command quietly; an error that reaches the top is one line naming what failed, not a
 * stack trace (PETREL_DEBUG=1 prints the stack too).
 */
import { Command, type CommanderError } from 'commander';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { describeError, packageVersion } from './options.js';

const commandName = process.argv[2] !== undefined && !process.argv[2].startsWith('-') ? ` ${process.argv[2]}` : '';

/** The last word on an error nobody handled: one line, the status of a failure. */
function dieOf(error: unknown): never {
  const { message, internal } = describeError(error);
  process.stderr.write(`petrel${commandName}: ${message}\n`);
  if (internal && process.env.PETREL_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exit(EXIT.failed);
}

// The reader went away (`| head`): what is left to write has nobody to read it. Not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(EXIT.ok);
  dieOf(error);
});
process.on('uncaughtException', dieOf);
process.on('unhandledRejection', dieOf);

const COMMANDS = {
  start: async () => (await import('./start-command.js')).startCommand(),
  crawl: async () => (await import('./crawl-command.js')).crawlCommand(),
  'queue-server': async () => (await import('./queue-server-command.js')).queueServerCommand(),
  fetcher: async (version: string) => (await import('./fetcher-command.js')).fetcherCommand(version),
  export: async () => (await import('./export-command.js')).exportCommand(),
  btree: async () => (await import('./btree-command.js')).btreeCommand(),
  db: async () => (await import('./db-command.js')).dbCommand(),
  warc: async () => (await import('./warc-command.js')).warcCommand(),
  index: async () => (await import('./index-command.js')).indexCommand(),
  search: async () => (await import('./index-command.js')).searchCommand(),
  config: async () => (await import('./config-command.js')).configCommand(),
  status: async () => (await import('./status-command.js')).statusCommand(),
} as const satisfies Record<string, (version: string) => Promise<Command>>;

type CommandName = keyof typeof COMMANDS;

const version = packageVersion();
const program = new Command('petrel')
  .description('Petrel: a polite, incremental web crawler. One queue server owns the crawl; N fetchers download over HTTP.')
  .version(version)
  .addHelpText('after', `\nDurations (--delay-ms, --timeout-ms, ...) take 500ms, 90s, 5min, 2h, 30d, or a number of milliseconds.\n${exitCodesHelp()}`);

const asked = process.argv[2];
const names: CommandName[] = asked !== undefined && Object.hasOwn(COMMANDS, asked) ? [asked as CommandName] : (Object.keys(COMMANDS) as CommandName[]);
for (const command of await Promise.all(names.map((name) => COMMANDS[name](version)))) program.addCommand(command);

/** Every command, however deep: usage errors exit 2, help and --version 0, and each says how to get help. */
function sameRulesFor(command: Command): void {
  command.showHelpAfterError(`(petrel ${command.name() === 'petrel' ? '' : `${fullName(command)} `}--help lists every option)`);
  command.exitOverride((error: CommanderError) => process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage));
  for (const sub of command.commands) sameRulesFor(sub);
}

function fullName(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at !== null && at.parent !== null; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

sameRulesFor(program);
try {
  await program.parseAsync(process.argv);
} catch (error) {
  dieOf(error);
}
