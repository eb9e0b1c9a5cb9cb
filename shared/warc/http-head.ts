/**
 * HTTP/1.1 message heads (RFC 9112 section 2.1: start line, field lines, an empty line) as bytes: the
 * two builders a fetcher needs to hand an exchange over when its HTTP client gives it the pieces
 * rather than the bytes, and a small, bounded reader of a head.
 *
 * undici, Petrel's client, writes a request as `METHOD target HTTP/1.1`, then `host`, then
 * `connection: keep-alive`, then the caller's fields in order, and hands a response's fields over as
 * raw name/value byte pairs in wire order (`onHeaders(status, rawHeaders, resume, statusText)`), so
 * these builders give back what crossed the wire up to the whitespace around each field value
 * (RFC 9112 section 5: optional whitespace is not part of the value).
 */

export const CRLF_CRLF = Buffer.from('\r\n\r\n');

/** The request head a fetcher sent, in the order undici writes it. */
export function requestHead(request: {
  readonly method: string;
  /** origin-form request target: path and query (RFC 9112 section 3.2.1). */
  readonly target: string;
  /** The Host field value (host, and port when not the scheme's default). */
  readonly host: string;
  /** The fields the caller gave undici, in order; `host` and `connection` are written by undici first. */
  readonly headers: readonly (readonly [string, string])[];
  /** undici writes `connection: keep-alive` unless told otherwise. */
  readonly connection?: string;
}): Buffer {
  let head = `${request.method} ${request.target} HTTP/1.1\r\nhost: ${request.host}\r\nconnection: ${request.connection ?? 'keep-alive'}\r\n`;
  for (const [name, value] of request.headers) head += `${name}: ${value}\r\n`;
  return Buffer.from(`${head}\r\n`, 'latin1');
}

/** The response head as received, from the status and undici's raw header pairs. */
export function responseHead(response: {
  readonly status: number;
  readonly statusText: string;
  /** Name, value, name, value, ... as undici's onHeaders hands them over. */
  readonly rawHeaders: readonly (Uint8Array | string)[];
  readonly httpVersion?: string;
}): Buffer {
  const parts: Buffer[] = [Buffer.from(`HTTP/${response.httpVersion ?? '1.1'} ${response.status} ${response.statusText}\r\n`, 'latin1')];
  const colon = Buffer.from(': ');
  const crlf = Buffer.from('\r\n');
  for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) {
    parts.push(bytes(response.rawHeaders[i]!), colon, bytes(response.rawHeaders[i + 1]!), crlf);
  }
  parts.push(crlf);
  return Buffer.concat(parts);
}

function bytes(value: Uint8Array | string): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'latin1') : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

export interface ParsedHead {
  /** The start line without its CRLF (request line or status line). */
  readonly startLine: string;
  /** The status code of a status line, or null for a request line or one that does not parse. */
  readonly status: number | null;
  /** Field lines as [name, value], names as written, values trimmed; obsolete line folding is joined. */
  readonly fields: readonly (readonly [string, string])[];
}

/** Reads a head (bytes up to and including the empty line; latin1, as RFC 9110 section 5.5 says of field bytes). */
export function parseHead(head: Uint8Array): ParsedHead {
  const text = Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('latin1');
  const lines = text.split(/\r?\n/);
  const startLine = lines[0] ?? '';
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    if ((line.startsWith(' ') || line.startsWith('\t')) && fields.length > 0) {
      const last = fields[fields.length - 1]!;
      last[1] = `${last[1]} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    fields.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  const status = /^HTTP\/\d(?:\.\d)? (\d{3})(?: |$)/.exec(startLine);
  return { startLine, status: status === null ? null : Number(status[1]), fields };
}

/** The first value of a field (case-insensitive name), or null. */
export function fieldValue(head: ParsedHead, name: string): string | null {
  const lower = name.toLowerCase();
  for (const [field, value] of head.fields) if (field.toLowerCase() === lower) return value;
  return null;
}

/** The media type of a Content-Type value, lowercased, without parameters; null when there is none. */
export function mediaType(contentType: string | null): string | null {
  if (contentType === null) return null;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) && type.length <= 200 ? type : null;
}

/** Index just past the head's empty line, or -1 if the bytes hold no complete head. */
export function headEnd(bytes: Uint8Array): number {
  const at = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(CRLF_CRLF);
  return at < 0 ? -1 : at + 4;
}
