/**
 * The exit statuses of every `petrel` command, defined once: the commands exit with these names, and
 * --help and the README list them from here (`exitCodesHelp`).
 */
export const EXIT = {
  /** Done: the crawl finished, the check found nothing wrong, the output is complete. */
  ok: 0,
  /** Failed at run time (a check: faults found). */
  failed: 1,
  /** Bad usage: an unknown or invalid option or argument, or a file or directory named that cannot be used. */
  usage: 2,
  /** The crawl finished, but not one page could be fetched (every request failed, or robots.txt refused or was unreachable). */
  nothingFetched: 3,
  /** A check found no fault but something to repair (one of the two meta copies is damaged). */
  warnings: 4,
  /** Interrupted (Ctrl-C, SIGINT) before it was done; 128 + 2, the shell's convention. */
  interrupted: 130,
} as const;

export type ExitName = keyof typeof EXIT;

const MEANING: Record<ExitName, string> = {
  ok: 'done',
  failed: 'failed (a check: faults found)',
  usage: 'bad usage: an unknown or invalid option, or a file or directory that cannot be used',
  nothingFetched: 'the crawl finished, but nothing could be fetched (see errorsByCode in the summary)',
  warnings: 'the check found no fault, but a warning (e.g. a damaged spare meta page: repairable)',
  interrupted: 'interrupted (Ctrl-C) before it was done; run the same command again to resume',
};

/** The "Exit status" paragraph of a command's --help, for the statuses it can end with. */
export function exitCodesHelp(names: readonly ExitName[] = Object.keys(EXIT) as ExitName[]): string {
  const lines = names.map((name) => `  ${String(EXIT[name]).padEnd(4)} ${MEANING[name]}`);
  return `\nExit status:\n${lines.join('\n')}\n`;
}
