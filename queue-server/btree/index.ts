/** Public surface of the on-disk B+tree. Everything else in this folder is internal. */
export { BTree, type BTreeOpenOptions, type BTreeStats, type EntriesOptions, type WriteBatch } from './tree.js';
export { BTreeError, type BTreeErrorCode, type BTreeErrorDisposition } from './errors.js';
export type { CheckFault, CheckReport } from './check.js';
export { KEY_BYTES, compareKeys, keyToHex, type PageId, type UrlKey } from './keys.js';
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MIN_PAGE_SIZE, maxValueBytes } from './page-codec.js';
