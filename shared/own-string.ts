/**
 * `text` as a string that holds only its own characters. V8 makes a slice of 13 characters or more
 * (a word cut from a page's text, a regular expression's match, an attribute htmlparser2 cut from the
 * page) a view into the string it was cut from, which keeps that whole string alive: a word cut from a
 * page's text, kept by the stem cache across thousands of pages, kept the whole page, with no bound
 * but the cache's entry count. In a crawl of the Rust documentation (2026-12-06), a fetcher's heap
 * snapshot 25 s in held 97.6 MB, 72 MB of it strings, among them page texts of up to 4 MB each kept by
 * one long word apiece in the cache; with the copy, at the same point, 31.4 MB and 7.5 MB. Joining a
 * character in front copies the characters into a new string; the slice of that is a view of the copy
 * alone. Use it for every string a long-lived cache keeps.
 */
export function ownString(text: string): string {
  return (' ' + text).slice(1);
}
