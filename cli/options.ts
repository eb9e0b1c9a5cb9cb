/** Option parsing for every command: integers with ranges, repeated options, and one-line errors for humans. */
import { InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';

export function integerOption(name: string, min: number, max: number = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be a whole number, got "${value}"`);
    const number = Number(value);
    if (number < min || number > max) throw new InvalidArgumentError(`${name} must be between ${min} and ${max}, got ${number}`);
    return number;
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
 * or the files they name) or 1 (a failure at run time, the default).
 */
export function fail(message: string, options: { status?: 1 | 2; command?: string } = {}): never {
  process.stderr.write(`petrel${options.command === undefined ? '' : ` ${options.command}`}: ${message}\n`);
  process.exit(options.status ?? 1);
}

/**
 * The certificate and key of `--tls-cert` / `--tls-key` (both or neither), read now so that a wrong
 * path is a one-line error at start, not a stack trace.
 */
export function readTlsFiles(values: { tlsCert?: string; tlsKey?: string }): { cert: Buffer; key: Buffer } | undefined {
  if (values.tlsCert === undefined && values.tlsKey === undefined) return undefined;
  if (values.tlsCert === undefined || values.tlsKey === undefined) fail('--tls-cert and --tls-key go together: give both (PEM files) to serve HTTPS', { status: 2 });
  const read = (option: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      fail(`cannot read ${option} ${file}: ${(error as Error).message}`, { status: 2 });
    }
  };
  return { cert: read('--tls-cert', values.tlsCert), key: read('--tls-key', values.tlsKey) };
}
