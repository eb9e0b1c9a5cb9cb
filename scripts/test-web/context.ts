/** What every site builder needs to know about the whole web (validated options and origins). */
import type { Profile, SpecialRole } from './hosts.js';

export interface WebContext {
  profile: Profile;
  pagesPerHost: number;
  /** Origins of the normal hosts, by normal index; [0] is 'main'. */
  normalOrigins: readonly string[];
  /** Origins of the special hosts; empty in the bench profile. */
  specialOrigins: Readonly<Partial<Record<SpecialRole, string>>>;
  /** ms */
  slowMs: number;
  crawlDelaySeconds: number;
}
