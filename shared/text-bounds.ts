/** Bounding strings from the web before they are posted or stored (the protocol's LIMITS say how long). */

/** Cuts to at most `max` characters without splitting a surrogate pair. */
export function bound(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end);
}
