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

export function decodeHtml(bytes: Uint8Array, contentType: string | null): string {
  const bom = sniffBom(bytes);
  if (bom !== null) return new TextDecoder(bom).decode(bytes);
  for (const label of [charsetFromContentType(contentType), sniffMeta(bytes)]) {
    if (label === null) continue;
    // A page that declares UTF-16 in a meta tag without a BOM is lying (WHATWG: treat as UTF-8).
    const decoder = decoderFor(label.startsWith('utf-16') ? 'utf-8' : label);
    if (decoder !== null) return decoder.decode(bytes);
  }
  return new TextDecoder('utf-8').decode(bytes);
}
