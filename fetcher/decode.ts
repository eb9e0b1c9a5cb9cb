import { TextDecoder } from 'node:util';
/**
 * Bytes to text for HTML, after the WHATWG encoding rules in short: a byte-order mark wins, then the
 * charset of the Content-Type header, then a `<meta charset>` or `<meta http-equiv>` declaration in
 * the first 1024 bytes, else UTF-8. Labels are resolved by the platform's TextDecoder (Node's full
 * ICU knows the WHATWG labels: shift_jis, euc-kr, windows-1252, ...); an unknown label falls back to
 * UTF-8. Invalid byte sequences become U+FFFD, never an exception.
 */
export function charsetFromContentType(contentType: string | null): string | null {
  if (contentType === null) return null;
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return match === null ? null : match[1]!.toLowerCase();
}

function sniffBom(bytes: Uint8Array): string | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  return null;
}

function sniffMeta(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const match = /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)/i.exec(head);
  return match === null ? null : match[1]!.toLowerCase();
}

function decoderFor(label: string): TextDecoder | null {
  try {
    return new TextDecoder(label, { fatal: false });
  } catch {
    return null;
  }
}

/**
 * HTML "determining the character encoding", the steps a crawler can take: 1. the BOM; 2. the
 * transport layer's charset (used as given, UTF-16 included); 3. the `<meta>` prescan, where a UTF-16
 * label means UTF-8 (the bytes just read as ASCII, so they are not UTF-16) and x-user-defined means
 * windows-1252; 4. the default, UTF-8. An unsupported label is skipped, as if absent.
 */
export function decodeHtml(bytes: Uint8Array, contentType: string | null): string {
  const bom = sniffBom(bytes);
  if (bom !== null) return new TextDecoder(bom).decode(bytes);
  const header = charsetFromContentType(contentType);
  const fromHeader = header === null ? null : decoderFor(header);
  if (fromHeader !== null) return fromHeader.decode(bytes);
  const meta = sniffMeta(bytes);
  if (meta !== null) {
    const decoder = decoderFor(meta.startsWith('utf-16') ? 'utf-8' : meta === 'x-user-defined' ? 'windows-1252' : meta);
    if (decoder !== null) return decoder.decode(bytes);
  }
  return new TextDecoder('utf-8').decode(bytes);
}
