/**
 * startTestWeb: validate options, bind every host, build the web for the port we got, and hand back
 * the handle tests use (origins, seeds, model, log, generation, close). Building the web is separate
 * from listening, so nothing here depends on which port the kernel picked, except the URLs themselves.
 */
import { closeServers, listenAll } from './bind.js';
import { GenerationState } from './generation-state.js';
import { createHostileHost, handleHostileRequest, type HostileHost } from './hostile/server.js';
import { createHangingHost, handleHangingRequest, type HangingHost } from './hostile/hanging.js';
import { createSitemapHost, handleSitemapRequest, type SitemapHost } from './sitemap-host.js';
import { FIRST_HOST_OCTET, HOST_ROLES, planHosts, type HostRole } from './hosts.js';
import { validateOptions, type TestWebOptions } from './options.js';
import { RequestLog, type RequestLogEntry } from './request-log.js';
import { handleRequest, type ServerState } from './server.js';
import { createSiteModel, type SiteModel } from './site-model.js';
import { buildWeb, type Web } from './web.js';

export interface TestWeb {
  port: number;
  /** Every host, e.g. 'http://127.0.0.2:PORT', normal hosts first, then special hosts. */
  origins: string[];
  /**
   * Origin of 'main' (the first normal host) and of each special host. In the 'bench' profile there are
   * no special hosts, and reading one of their roles throws.
   */
  hostByRole: Record<HostRole, string>;
  /** The main host's /index.html. */
  seeds: string[];
  /** Every request, in order of arrival (see request-log.ts). */
  log: RequestLogEntry[];
  /** Describes the current generation; `model.changes(n)` says what generation n changes. */
  model: SiteModel;
  /**
   * Which version of the web is served: 0 at start. Assigning it is setGeneration(). See
   * scripts/test-web/generations.ts for what generation 1 (and every later one, the same) changes.
   */
  generation: number;
  /**
   * Serves generation `n` (a non-negative integer; RangeError otherwise) from the next request on,
   * and restarts the failure count of every flaky page, even when `n` is the current generation.
   * Requests already being answered are not affected.
   */
  setGeneration(n: number): void;
  clearLog(): void;
  /**
   * The hostile host (profile 'full' only; reading it in 'bench' throws): its own loopback address after
   * the last special host, in no `origins` list and linked from nowhere, so crawls reach it only when
   * seeded with it. Its cases and their ground truth are `hostile.cases` (scripts/test-web/hostile/).
   */
  readonly hostile: HostileHost;
  /**
   * The hanging host (profile 'full' only): the address after the hostile host's; robots.txt 404, every
   * other request never answered (scripts/test-web/hostile/hanging.ts). Linked from nowhere.
   */
  readonly hanging: HangingHost;
  /**
   * The sitemap host (profile 'full' only): the address after the hanging host's; pages reachable only
   * through its sitemaps, sitemaps that list what they may not (scripts/test-web/sitemap-host.ts). Linked from nowhere.
   */
  readonly sitemaps: SitemapHost;
  close(): Promise<void>;
}

const BIND_ATTEMPTS = 5;

export async function startTestWeb(opts: TestWebOptions = {}): Promise<TestWeb> {
  const options = validateOptions(opts);
  const plans = planHosts({ normalHosts: options.hosts, profile: options.profile });
  const state: ServerState = { log: new RequestLog(), timers: new Set(), generation: new GenerationState(), pageDelayMs: options.pageDelayMs };
  let web: Web | null = null;
  let hostile: HostileHost | null = null;
  const addresses = plans.map((plan) => plan.address);
  const hostileAddress = options.profile === 'full' ? `127.0.0.${FIRST_HOST_OCTET + plans.length}` : null;
  if (hostileAddress !== null) addresses.push(hostileAddress);
  const hangingAddress = options.profile === 'full' ? `127.0.0.${FIRST_HOST_OCTET + plans.length + 1}` : null;
  if (hangingAddress !== null) addresses.push(hangingAddress);
  let hanging: HangingHost | null = null;
  const sitemapAddress = options.profile === 'full' ? `127.0.0.${FIRST_HOST_OCTET + plans.length + 2}` : null;
  if (sitemapAddress !== null) addresses.push(sitemapAddress);
  let sitemaps: SitemapHost | null = null;
  const { port, servers } = await listenAll(addresses, { port: options.port, attempts: BIND_ATTEMPTS }, (index, req, res) => {
    if (index === plans.length && hostile !== null) return handleHostileRequest(hostile, req, res, state);
    if (index === plans.length + 1 && hanging !== null) return handleHangingRequest(hanging, req, res, state);
    if (index === plans.length + 2 && sitemaps !== null) return handleSitemapRequest(sitemaps, req, res, state);
    const host = web?.hosts[index];
    // Only reachable if something guesses the port during the few microseconds before buildWeb returns.
    if (host === undefined) res.writeHead(503, { 'Retry-After': '1' }).end();
    else handleRequest(host, req, res, state);
  });
  web = buildWeb(plans, port, options);
  if (hostileAddress !== null) hostile = createHostileHost(hostileAddress, port);
  if (hangingAddress !== null) hanging = createHangingHost(hangingAddress, port);
  if (sitemapAddress !== null) sitemaps = createSitemapHost(sitemapAddress, port, web.hosts[0]!.origin);

  const origins = web.hosts.map((host) => host.origin);
  const roles: Partial<Record<HostRole, string>> = {};
  for (const host of web.hosts) if (host.plan.role !== null) roles[host.plan.role] = host.origin;
  const main = roles.main;
  if (main === undefined) throw new Error('no main host');

  let closing: Promise<void> | null = null;
  return {
    port,
    origins,
    hostByRole: rolesFor(roles, options.profile),
    seeds: [`${main}/index.html`],
    get log() {
      return state.log.entries;
    },
    model: createSiteModel(web, { generation: () => state.generation.current }),
    get generation() {
      return state.generation.current;
    },
    set generation(n: number) {
      state.generation.set(n);
    },
    setGeneration: (n) => state.generation.set(n),
    clearLog: () => state.log.clear(),
    get hostile(): HostileHost {
      if (hostile === null) throw new Error(`the '${options.profile}' profile has no hostile host`);
      return hostile;
    },
    get hanging(): HangingHost {
      if (hanging === null) throw new Error(`the '${options.profile}' profile has no hanging host`);
      return hanging;
    },
    get sitemaps(): SitemapHost {
      if (sitemaps === null) throw new Error(`the '${options.profile}' profile has no sitemap host`);
      return sitemaps;
    },
    close() {
      closing ??= (async () => {
        for (const timer of state.timers) clearTimeout(timer);
        state.timers.clear();
        await closeServers(servers);
      })();
      return closing;
    },
  };
}

/** The record the API promises; roles the profile lacks throw on access instead of reading undefined. */
function rolesFor(roles: Partial<Record<HostRole, string>>, profile: string): Record<HostRole, string> {
  return new Proxy(roles as Record<HostRole, string>, {
    get(target, property, receiver) {
      if (typeof property === 'string' && (HOST_ROLES as readonly string[]).includes(property) && !(property in target)) {
        throw new Error(`the '${profile}' profile has no '${property}' host`);
      }
      return Reflect.get(target, property, receiver);
    },
  });
}
