/** A whole-number option of the benchmark's modes, or an error naming the option and its range. */
export function intOption(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer from ${min} to ${max}, got ${text}`);
  return n;
}
