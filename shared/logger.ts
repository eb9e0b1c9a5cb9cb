/**
 * The one logger of every Petrel process (pino): a record has `level`, `time` (ms since epoch), `role`
 * (queue-server, fetcher, crawl, start), `fetcher` (a fetcher's name), a stable `event` name
 * (listening, crawl-started, commit, fetcher-joined, fetcher-lost, lease-expired, robots-unreachable,
 * disk-full, storage-error, storage-recovered, draining, stopped, http, ...) and `msg`.
 *
 * Two forms, on stderr:
 *  - `json` (`--log-format json`, PETREL_LOG_FORMAT=json; what the systemd unit uses): one JSON object
 *    a line, every record at or above `--log-level`.
 *  - `human` (the default, for a terminal and for `petrel crawl`, which shows its children's lines):
 *    the lines people read before this logger existed, unchanged (records logged with `say`), and, at
 *    --log-level debug or trace, every other record as `petrel <role>: <event> <msg> {fields}`.
 *    So the operations events add nothing to what a person sees unless asked for.
 *
 * Secrets never go into a record: callers log no header, token, cookie or signature, and the access
 * log (queue-server/ops/access-log.ts) logs the method, the path without its query, the status, the
 * duration, the size and the fetcher id. A test greps a whole crawl's logs for the token values.
 *
 * Lines go to process.stderr, as every message of Petrel did before, so their order is kept.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const satisfies readonly LevelWithSilent[];
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type Role = 'queue-server' | 'fetcher' | 'crawl' | 'start';

export interface LoggerOptions {
  readonly role: Role;
  /** A fetcher's name. */
  readonly fetcher?: string;
  /** Default PETREL_LOG_LEVEL, else info. */
  readonly level?: LogLevel;
  /** Default PETREL_LOG_FORMAT, else human. */
  readonly format?: LogFormat;
  /** Where lines go (default: stderr, fd 2). */
  readonly write?: (line: string) => void;
}

/** The level and form from the environment, for processes that have no option for them (children of crawl and start). */
export function logLevelFromEnv(): LogLevel {
  const value = process.env.PETREL_LOG_LEVEL;
  return (LOG_LEVELS as readonly string[]).includes(value ?? '') ? (value as LogLevel) : 'info';
}

export function logFormatFromEnv(): LogFormat {
  return process.env.PETREL_LOG_FORMAT === 'json' ? 'json' : 'human';
}

export function createLogger(options: LoggerOptions): Logger {
  const level = options.level ?? logLevelFromEnv();
  const format = options.format ?? logFormatFromEnv();
  const write = options.write ?? ((line: string) => writeStderr(line));
  const verbose = level === 'debug' || level === 'trace';
  const stream = {
    write(line: string) {
      if (format === 'json') return write(line);
      const record = JSON.parse(line) as { msg?: string; say?: boolean; role?: string; event?: string; fetcher?: string; [field: string]: unknown };
      if (record.say === true) return write(`${record.msg ?? ''}\n`);
      if (!verbose) return;
      const { level: _l, time: _t, pid: _p, hostname: _h, role, event, msg, fetcher, say: _s, ...fields } = record;
      const extra = Object.keys(fields).length === 0 ? '' : ` ${JSON.stringify(fields)}`;
      write(`petrel ${role}${fetcher === undefined ? '' : ` ${fetcher}`}: ${event ?? 'log'}${msg === undefined ? '' : ` ${msg}`}${extra}\n`);
    },
  };
  return pino(
    {
      level,
      base: { pid: process.pid, role: options.role, ...(options.fetcher === undefined ? {} : { fetcher: options.fetcher }) },
      // `say` marks the lines written for people; it is the human form's business, not the JSON reader's.
      formatters: { level: (label, number) => ({ level: number, levelName: label }) },
      hooks: {
        logMethod(args, method) {
          if (format === 'json' && typeof args[0] === 'object' && args[0] !== null && 'say' in args[0]) {
            const { say: _say, ...rest } = args[0] as Record<string, unknown>;
            args[0] = rest;
          }
          return method.apply(this, args);
        },
      },
    },
    stream,
  );
}

/**
 * A `(line) => void` for code that logs lines for people (the log functions of today's call sites):
 * each becomes a record with `event` and `say`, so the human form prints the line as it was.
 */
export function sayer(logger: Logger, event: string, level: 'info' | 'warn' | 'error' = 'info'): (line: string) => void {
  return (line: string) => {
    // A child's own JSON record (PETREL_LOG_FORMAT=json is passed on to children) goes out as it is,
    // with its own level, role and event, rather than as the text of one of ours.
    if (isJsonRecord(line)) return writeStderr(`${line}\n`);
    logger[level]({ event, say: true }, line);
  };
}

function isJsonRecord(line: string): boolean {
  if (!line.startsWith('{"level":')) return false;
  try {
    const record = JSON.parse(line) as unknown;
    return typeof record === 'object' && record !== null && typeof (record as { level?: unknown }).level === 'number';
  } catch {
    return false;
  }
}

function writeStderr(line: string): void {
  // process.stderr writes are synchronous on Linux for files, pipes and terminals alike (Node's
  // documentation, "A note on process I/O"), so the last lines before process.exit are not lost.
  process.stderr.write(line);
}
