/**
 * Non-HTML bodies: a real PNG, a small well-formed PDF and a JSON document. Crawlers must fetch these
 * (they are linked) but never parse them for links.
 */

/** An 8x8 RGB gradient, 162 bytes, built once with a deflate at level 9 and frozen here. */
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAaUlEQVR42hWNQREAQQzCkFIpSKkUpERKpSDlbnkymUQSIyxWRCBOVEjDDB52yMBw' +
  'QwfJjLFZE4M5UyMts3jZJQvLLV2kMMFhQwLhQvM3nhY/lPB2UP7GMYePPXLvvqP3N8oUly3pg6+0fN6oYAEHlPG0AAAAAElFTkSuQmCC';

export function pngBytes(): Buffer {
  return Buffer.from(PNG_BASE64, 'base64');
}

/** A one-page PDF 1.4 with a correct cross-reference table (byte offsets computed, not guessed). */
export function pdfBytes(): Buffer {
  const stream = 'BT /F1 18 Tf 72 720 Td (Petrel test web: a small PDF) Tj ET';
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

export function jsonBytes(origin: string): Buffer {
  const data = {
    name: 'Petrel test web',
    description: 'A JSON resource: crawlers fetch it but must not look for links in it.',
    index: `${origin}/index.html`,
    numbers: [1, 2, 3, 5, 8, 13],
  };
  return Buffer.from(`${JSON.stringify(data, null, 2)}\n`, 'utf8');
}
