/**
 * Option parsing for every command: integers and durations with ranges, repeated options, the data
 * directory, and one-line errors for humans (`fail`, `describeError`) with the exit statuses of
 * exit-codes.ts.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DURATION_SYNTAX, formatDuration, parseDuration } from '../shared/duration.js';
import { DEFAULT_DATA_DIR } from '../queue-server/storage/data-dir.js';
import { EXIT } from './exit-codes.js';

export function integerOption(name: string, min: number, max: number = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be a whole number, got "${value}"`);
    const number = Number(value);
    if (number < min || number > max) throw new InvalidArgumentError(`${name} must be between ${min} and ${max}, got ${number}`);
    return number;
  };
}

/** A duration option (shared/duration.ts): `90s`, `500ms`, `30d`, or plain milliseconds; the value is ms. */
export function durationOption(name: string, min: number, max: number = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const ms = parseDuration(value);
    if (ms === null) throw new InvalidArgumentError(`${name} must be a duration (${DURATION_SYNTAX}), got "${value}"`);
    if (ms < min || ms > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `at least ${formatDuration(min)}` : `between ${formatDuration(min)} and ${formatDuration(max)}`;
      throw new InvalidArgumentError(`${name} must be ${range}, got ${value}`);
    }
    return ms;
  };
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/**
 * Prints the error, `petrel <command>: message`, and exits with status 2 (bad usage: the options
 * or the files they name) or 1 (a failure at run time, the default); see exit-codes.ts.
 */
/** Set by a command run with --json (failuresInJson): `fail` answers on stdout in JSON too. */
let failuresAsJson = false;

/**
 * For a command whose --json promises JSON: from its action on, a failure is also one JSON object on
 * stdout, `{"ok": false, "error": {"code", "message"}}` (code `usage`, `failed`, or the one given), as
 * `db check --json` answers. Installed as the command's preAction hook.
 */
export function failuresInJson(command: Command): Command {
  return command.hook('preAction', (_command, action) => {
    if (action.opts().json === true) failuresAsJson = true;
  });
}

export function fail(message: string, options: { status?: number; command?: string; code?: string } = {}): never {
  const status = options.status ?? EXIT.failed;
  if (failuresAsJson) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: options.code ?? (status === EXIT.usage ? 'usage' : 'failed'), message } })}\n`);
  process.stderr.write(`petrel${options.command === undefined ? '' : ` ${options.command}`}: ${message}\n`);
  process.exit(status);
}

/** `--data`: the same option, default, wording and check in every command. */
export const DATA_OPTION = { flags: '--data <dir>', default: DEFAULT_DATA_DIR, parse: dataDirOption } as const;

/** An empty `--data ''` would put a crawl's files in the current directory: refused, as any value that names nothing. */
function dataDirOption(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError(`--data names no directory: give a path, e.g. --data ${DEFAULT_DATA_DIR}`);
  return value;
}

/**
 * A data directory a command will create or write: refused, before anything is started or created,
 * when it names a file, when its nearest existing parent is not a directory, or is not writable
 * (a read-only file system, no permission).
 */
export function checkWritableDataDir(dir: string, command: string): void {
  const usage = { status: EXIT.usage, command };
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) fail(`--data ${dir} is a file, not a directory: name a directory (it is created if missing)`, usage);
    if (!writable(dir)) fail(`cannot write to the data directory ${dir} (${whyNotWritable(dir)}): choose another --data`, usage);
    return;
  }
  let parent = dirname(resolve(dir));
  while (!existsSync(parent)) parent = dirname(parent);
  if (!statSync(parent).isDirectory()) fail(`cannot create the data directory ${dir}: ${parent} is a file, not a directory`, usage);
  if (!writable(parent)) fail(`cannot create the data directory ${dir} in ${parent} (${whyNotWritable(parent)}): choose another --data`, usage);
}

/** A data directory a command only reads (export, db): it must exist, be one, and hold `needs`. */
export function checkExistingDataDir(dir: string, command: string, needs: string): void {
  const problem = existingDataDirProblem(dir, needs);
  if (problem !== null) fail(problem, { status: EXIT.usage, command });
}

/** Why `dir` is not a data directory holding `needs`, or null when it is. */
export function existingDataDirProblem(dir: string, needs: string): string | null {
  const problem = dataDirProblem(dir);
  if (problem !== null) return problem;
  if (!existsSync(resolve(dir, needs))) return `no ${needs} in ${dir}: is it a Petrel data directory, and has a crawl run in it yet?`;
  return null;
}

/** Why `dir` is not a directory this user can read (missing, a file, no permission), or null when it is one. */
export function dataDirProblem(dir: string): string | null {
  if (!existsSync(dir)) return `no data directory at ${dir}: give --data DIR (petrel crawl and petrel start keep their data in ${DEFAULT_DATA_DIR} by default)`;
  if (!statSync(dir).isDirectory()) return `--data ${dir} is a file, not a directory`;
  // Else a directory this user may not read looks empty: "no <file> in it" would send them looking for a crawl.
  const unreadable = whyNotReadable(dir);
  if (unreadable !== null) return `cannot read the data directory ${dir} (${unreadable}): run as its owner, or give another --data`;
  return null;
}

/** Why a file cannot be written where it is named (a directory by that name, a missing or read-only directory), or null. */
export function writableFileProblem(file: string): string | null {
  const path = resolve(file);
  if (existsSync(path)) {
    if (statSync(path).isDirectory()) return 'is a directory: give a file name';
    return writable(path) ? null : `cannot be written (${whyNotWritable(path)})`;
  }
  const dir = dirname(path);
  if (!existsSync(dir)) return `its directory ${dir} does not exist`;
  return writable(dir) ? null : `its directory ${dir} cannot be written (${whyNotWritable(dir)})`;
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why a directory cannot be listed and entered, or null when it can. */
function whyNotReadable(dir: string): string | null {
  try {
    accessSync(dir, constants.R_OK | constants.X_OK);
    return null;
  } catch (error) {
    return errnoWords(error);
  }
}

function whyNotWritable(path: string): string {
  try {
    accessSync(path, constants.W_OK);
    return 'not writable';
  } catch (error) {
    return ERRNO_WORDS[(error as NodeJS.ErrnoException).code ?? ''] ?? 'not writable';
  }
}

const ERRNO_WORDS: Record<string, string> = {
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large (the file system\'s limit, or the process\'s file size limit: ulimit -f)',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'already exists',
  EMFILE: 'too many open files',
  EADDRINUSE: 'address in use',
};

/** What went wrong with a file, in words ("no such file or directory"), for a message that names the file itself. */
export function errnoWords(error: unknown): string {
  const code = (error as Partial<NodeJS.ErrnoException>)?.code;
  return (code === undefined ? undefined : ERRNO_WORDS[code]) ?? (code ?? (error as Error)?.message ?? String(error));
}

/**
 * What a daemon does when it finds a data file damaged while serving (queue-server/api/http-errors.ts):
 * says which file and what to run, and exits 1 at once. Answering 500 to every claim that reads the
 * page, as it did, stalled a crawl for ever. Nothing acknowledged is lost: results are acknowledged
 * after their commit, and a fetcher keeps what was not.
 */
export function exitOnDamagedData(command: string, log: (line: string) => void): (error: Error) => void {
  return (error) => {
    log(`petrel ${command}: ${describeError(error).message}; stopping. cache.btree holds only the validators of earlier fetches: if it is the damaged file, deleting it is a remedy (those pages are then fetched in full)`);
    process.exit(EXIT.failed);
  };
}

/**
 * Why a daemon could not start on `dataDir`: describeError's line, and the data directory when the
 * error names no file (a full disk fails a write, which knows only its descriptor).
 */
export function startFailure(error: unknown, dataDir: string): string {
  const { message } = describeError(error);
  const err = error as Partial<NodeJS.ErrnoException>;
  return typeof err?.code === 'string' && typeof err.syscall === 'string' && err.path === undefined ? `${message} (in the data directory ${dataDir})` : message;
}

/**
 * One line for an error that reached the top of a command: an error of the file system names the file
 * and what went wrong in words; a B-Tree or search index error says the file is damaged and which
 * command shows how (a closed or read-only index handle used for writing is a bug, said so).
 */
export function describeError(error: unknown): { message: string; internal: boolean } {
  const err = error as Partial<NodeJS.ErrnoException> & { name?: string; page?: number };
  if (err?.name === 'BTreeError') {
    const hint = err.code === 'BTREE_CORRUPT' ? ' (the file is damaged: petrel db check --data DIR, or petrel btree check FILE, lists what is wrong)' : '';
    return { message: `${err.message}${hint}`, internal: false };
  }
  if (err?.name === 'IndexError' && err.code !== 'INDEX_CLOSED' && err.code !== 'INDEX_READ_ONLY') {
    const hint = err.code === 'INDEX_CORRUPT' && !err.message!.includes('index check') ? ' (the search index is damaged: petrel index check --data DIR lists what is wrong)' : '';
    return { message: `${err.message}${hint}`, internal: false };
  }
  if (typeof err?.code === 'string' && typeof err.syscall === 'string') {
    const words = ERRNO_WORDS[err.code] ?? err.code;
    const path = err.path === undefined ? '' : ` ${err.path}`;
    return { message: `cannot ${err.syscall}${path}: ${words}`, internal: false };
  }
  // A plain Error is a message written for people (a directory in use, a port taken), and so is a
  // refusal to join a cluster; a TypeError and its kind are a broken invariant: a bug, said so.
  if (error instanceof Error && (error.constructor === Error || err.name === 'ClusterError')) return { message: error.message, internal: false };
  const message = error instanceof Error ? `${error.name === 'Error' ? 'error' : error.name}, ${error.message}` : String(error);
  return { message: `internal error (${message}): a bug in Petrel; PETREL_DEBUG=1 shows where it happened`, internal: true };
}

/**
 * The certificate and key of `--tls-cert` / `--tls-key` (both or neither), read now so that a wrong
 * path is a one-line error at start, not a stack trace.
 */
export function readTlsFiles(values: { tlsCert?: string; tlsKey?: string }): { cert: Buffer; key: Buffer } | undefined {
  if (values.tlsCert === undefined && values.tlsKey === undefined) return undefined;
  if (values.tlsCert === undefined || values.tlsKey === undefined) fail('--tls-cert and --tls-key go together: give both (PEM files) to serve HTTPS', { status: EXIT.usage });
  const read = (option: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      fail(`cannot read ${option} ${file}: ${describeError(error).message}`, { status: EXIT.usage });
    }
  };
  const cert = read('--tls-cert', values.tlsCert);
  const key = read('--tls-key', values.tlsKey);
  // Checked now, so that a file that is no PEM is a usage error (exit 2: a service manager does not
  // restart for it), not a failure of the server's start.
  try {
    new X509Certificate(cert);
  } catch {
    fail(`--tls-cert ${values.tlsCert} is not a PEM certificate`, { status: EXIT.usage });
  }
  try {
    createPrivateKey(key);
  } catch {
    fail(`--tls-key ${values.tlsKey} is not a PEM private key (or it is encrypted)`, { status: EXIT.usage });
  }
  return { cert, key };
}

/**
 * A `--token-file` a command will read, or create where it is missing: refused (exit 2) when it names a
 * directory, cannot be read, or is missing in a directory that cannot be written.
 */
export function checkTokenFileOption(file: string | undefined, command: string): void {
  if (file === undefined) return;
  const usage = { status: EXIT.usage, command };
  if (existsSync(file)) {
    if (!statSync(file).isFile()) fail(`--token-file ${file} is not a file`, usage);
    try {
      accessSync(file, constants.R_OK);
    } catch (error) {
      fail(`cannot read --token-file ${file} (${errnoWords(error)})`, usage);
    }
    return;
  }
  const dir = dirname(resolve(file));
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`--token-file ${file}: no such file, and no directory ${dir} to create it in`, usage);
  if (!writable(dir)) fail(`--token-file ${file}: no such file, and ${dir} is not writable to create it (${whyNotWritable(dir)})`, usage);
}
