// Petrel admin page. Everything shown comes from the status stream and much of it from the web
// (URLs, titles, error codes): it is put into the page with textContent only, never as markup.
// Live updates: one EventSource on /admin/api/stream; the browser reconnects it by itself, and this
// script opens a new one if the browser gives up (or the stream goes silent), so the page never stops.
import uPlot from '/admin/static/vendor/uplot.js';

const API = {
  session: '/admin/api/session',
  stream: '/admin/api/stream',
  history: '/admin/api/history',
  settings: '/admin/api/settings',
  logout: '/admin/logout',
  control: (action) => `/admin/api/${action}`,
  cluster: '/admin/api/cluster',
};
const CLUSTER_EVERY_MS = 2000;
const LOGIN = '/admin/login';
const RATE_WINDOW_MS = 5000;
const CHART_POINTS = 600; // ten minutes at one point a second
const RECENT_ROWS = 15;
const CHART_MIN_SPAN_S = 120; // the time axis shows at least two minutes
const STREAM_SILENCE_MS = 40_000; // the server pings every 15 s

let csrfToken = null;
let latest = null;
let serverOffsetMs = 0; // server clock minus this browser's clock
let live = false;

// ---------- small DOM helpers (text only) ----------

const $ = (id) => {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`admin page: #${id} missing`);
  return node;
};

/** An element with text content and properties; children are nodes or strings (as text). */
function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'class') node.className = value;
    else if (key === 'title') node.title = String(value);
    else if (key === 'colSpan') node.colSpan = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

function setText(id, text) {
  const node = $(id);
  const value = String(text);
  if (node.textContent !== value) {
    const first = node.textContent === '–';
    node.textContent = value;
    const stat = node.closest('.stat');
    if (stat !== null && !first) {
      stat.classList.remove('changed');
      void stat.offsetWidth; // restart the flash animation
      stat.classList.add('changed');
    }
  }
}

// ---------- formatting ----------

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const fmt = (n) => (typeof n === 'number' && Number.isFinite(n) ? integer.format(n) : '–');
const fmtRate = (n) => (n === null || !Number.isFinite(n) ? '–' : decimal.format(n));

function fmtBytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value >= 100 ? 0 : 1)} ${units[unit]}`;
}

function fmtDuration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return '–';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

function fmtAgo(serverMs) {
  const age = serverNow() - serverMs;
  if (age < 1500) return 'now';
  return `${fmtDuration(age)} ago`;
}

function fmtClock(serverMs) {
  const d = new Date(serverMs - serverOffsetMs);
  return d.toLocaleTimeString('en-GB', { hour12: false });
}

const serverNow = () => Date.now() + serverOffsetMs;
const statusClass = (status) => (status === null || status === undefined ? 'none' : `s${String(status)[0]}`);
const noLimit = (n) => (n === null || n === undefined ? 'no limit' : fmt(n));

// ---------- rates from successive snapshots ----------

/** Rate of a cumulative counter over the last RATE_WINDOW_MS, from the snapshots it was seen in. */
class RateMeter {
  #samples = []; // { t: ms (this browser), v }

  add(t, v) {
    const last = this.#samples[this.#samples.length - 1];
    if (last !== undefined && v < last.v) this.#samples = []; // a counter that went back: a new crawl or a restart
    this.#samples.push({ t, v });
    // Keep one sample at or before the window's start, drop the older ones.
    while (this.#samples.length > 2 && this.#samples[1].t <= t - RATE_WINDOW_MS) this.#samples.shift();
  }

  /** Units per second at time `now` (the counter has not moved since its last snapshot). */
  rate(now) {
    if (this.#samples.length === 0) return null;
    const last = this.#samples[this.#samples.length - 1];
    let base = this.#samples[0];
    for (const sample of this.#samples) if (sample.t <= now - RATE_WINDOW_MS) base = sample;
    const seconds = (now - base.t) / 1000;
    if (seconds < 1) return null;
    return Math.max(0, (last.v - base.v) / seconds);
  }
}

const pagesMeter = new RateMeter();
const fetcherMeters = new Map(); // fetcher id -> RateMeter

// ---------- the chart ----------

const chartData = [[], []];
let chart = null;

function makeChart() {
  const container = $('rate-chart');
  const width = Math.max(240, container.clientWidth);
  const styles = getComputedStyle(document.documentElement);
  const accent = styles.getPropertyValue('--accent').trim() || '#1f6feb';
  const muted = styles.getPropertyValue('--muted').trim() || '#5d6b7b';
  const line = styles.getPropertyValue('--line').trim() || '#dfe4ea';
  const axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
  chart = new uPlot(
    {
      width,
      height: width < 420 ? 170 : 210,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: (_u, min, max) => (max === null ? [Date.now() / 1000 - CHART_MIN_SPAN_S, Date.now() / 1000] : [Math.min(min, max - CHART_MIN_SPAN_S), max]) },
        y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.15))] } },
      axes: [{ ...axis, space: 60, values: (_u, splits) => splits.map(timeLabel) }, { ...axis, size: 44 }],
      series: [{}, { label: 'pages/s', stroke: accent, width: 2, fill: `${accent}22`, points: { show: false }, spanGaps: false }],
    },
    chartData,
    container,
  );
  new ResizeObserver(() => {
    const w = Math.max(240, container.clientWidth);
    if (chart !== null && Math.abs(chart.width - w) > 2) chart.setSize({ width: w, height: w < 420 ? 170 : 210 });
  }).observe(container);
}

/** A page API's JSON answer, or null when the server is away or answers with an error (the page goes on without). */
async function getJson(url) {
  try {
    const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

/**
 * The chart's past from the server's samples of pages fetched (at most one a second, none while
 * nothing changes), as the same 5-second rate the live points use.
 */
async function loadHistory() {
  const answer = await getJson(API.history);
  if (answer === null) return;
  const now = Date.now();
  serverOffsetMs = answer.serverNow - now;
  const samples = answer.pagesFetched.map(([at, value]) => ({ t: at - serverOffsetMs, v: value }));
  if (samples.length === 0) return;
  // valueAt(t): the counter at time t, the last sample at or before it (samples are oldest first).
  const valueAt = (t) => {
    let value = null;
    for (const sample of samples) {
      if (sample.t > t) break;
      value = sample.v;
    }
    return value;
  };
  const first = samples[0].t;
  for (let t = Math.max(Math.ceil(first / 1000) * 1000, now - CHART_POINTS * 1000); t < now; t += 1000) {
    const span = Math.min(RATE_WINDOW_MS, t - first);
    const value = valueAt(t);
    const base = valueAt(t - span);
    chartData[0].push(Math.floor(t / 1000));
    chartData[1].push(span < 1000 || value === null || base === null ? null : Math.max(0, (value - base) / (span / 1000)));
  }
  for (const sample of samples) if (sample.t >= now - 2 * RATE_WINDOW_MS) pagesMeter.add(sample.t, sample.v);
  if (chart !== null) chart.setData(chartData);
}

/** A time axis label: 14:05 on the minute, :30 between. */
function timeLabel(seconds) {
  const d = new Date(seconds * 1000);
  const two = (n) => String(n).padStart(2, '0');
  return d.getSeconds() === 0 ? `${two(d.getHours())}:${two(d.getMinutes())}` : `:${two(d.getSeconds())}`;
}

/** One point a second: the current rate, or a gap while the stream is down. */
function chartTick() {
  const now = Date.now();
  chartData[0].push(Math.floor(now / 1000));
  chartData[1].push(live && latest !== null ? pagesMeter.rate(now) : null);
  if (chartData[0].length > CHART_POINTS) {
    chartData[0].shift();
    chartData[1].shift();
  }
  if (chart !== null) chart.setData(chartData);
}

// ---------- rendering a status snapshot ----------

function render(status) {
  const now = Date.now();
  latest = status;
  if (typeof status.serverNow === 'number') serverOffsetMs = status.serverNow - now;
  pagesMeter.add(now, status.pagesFetched);
  for (const f of status.fetchers) {
    let meter = fetcherMeters.get(f.id);
    if (meter === undefined) fetcherMeters.set(f.id, (meter = new RateMeter()));
    meter.add(now, f.pagesFetched);
  }
  // Fetchers the queue server forgot are forgotten here too.
  const known = new Set(status.fetchers.map((f) => f.id));
  for (const id of fetcherMeters.keys()) if (!known.has(id)) fetcherMeters.delete(id);
  renderHeader(status);
  renderCounters(status, now);
  renderStatusCodes(status);
  renderFetchers(status, now);
  renderStorage(status);
  renderRecent(status);
  renderErrors(status);
  renderHosts(status);
  renderBackedOff(status);
  renderTrapShapes(status);
  renderSettings(status);
  renderControls(status);
}

let shownState = null;

function renderHeader(status) {
  // A new state makes an old error under the controls (e.g. "a crawl is running") stale.
  if (shownState !== null && shownState !== status.displayState) {
    for (const id of ['control-message', 'crawl-message']) if ($(id).classList.contains('error')) $(id).textContent = '';
  }
  shownState = status.displayState;
  const state = $('state');
  // Storage failing (a full disk) pauses the crawl whatever its state says: shown first, the reason on hover.
  const trouble = status.storageError ?? null;
  state.dataset.state = trouble === null ? status.displayState : 'storage-error';
  state.textContent = trouble === null ? status.displayState : `storage error: ${trouble.code}`;
  state.title = trouble === null ? '' : `${trouble.code}: ${trouble.message} — the crawl is paused (results refused, no new work) until a commit succeeds; attempt ${trouble.attempts}`;
  $('elapsed').textContent = `${fmtDuration(status.elapsedMs)} elapsed · avg ${fmtRate(status.pagesPerSecond)} pages/s`;
}

/** Pages per second now: nothing is fetched by a crawl that is not running and has no URL out on lease. */
function rateNow(status, now) {
  if (status.displayState !== 'running' && status.itemsLeased === 0) return 0;
  return pagesMeter.rate(now);
}

function renderCounters(status, now) {
  setText('c-pagesFetched', fmt(status.pagesFetched));
  setText('c-rateNow', fmtRate(rateNow(status, now)));
  setText('c-notModified', fmt(status.notModified));
  setText('c-skippedFresh', fmt(status.skippedFresh));
  setText('c-errors', fmt(status.errors));
  $('c-errors').classList.toggle('bad', status.errors > 0);
  setText('c-robotsDenied', fmt(status.robotsDenied));
  setText('c-urlsDiscovered', fmt(status.urlsDiscovered));
  setText('c-frontierSize', fmt(status.frontierSize));
  setText('c-itemsLeased', fmt(status.itemsLeased));
  setText('c-hostsActive', fmt(status.hosts?.active));
  setText('c-hostsWaiting', fmt(status.hosts?.waiting));
  setText('c-bytesDownloaded', fmtBytes(status.bytesDownloaded));
  const extra = [`${fmt(status.requests)} requests`, `${fmt(status.redirects)} redirects`, `${fmt(status.leasesOut)} leases out`, `${fmt(status.origins)} hosts known`];
  if (status.leasesExpired > 0) extra.push(`${fmt(status.leasesExpired)} leases expired`);
  if (status.linksCut > 0) extra.push(`${fmt(status.linksCut)} links cut on ${fmt(status.pagesLinksCut)} pages (--max-links-per-page)`);
  if (status.pagesTruncated > 0) extra.push(`${fmt(status.pagesTruncated)} pages cut short`);
  $('counters-note').textContent = extra.join(' · ');
}

function renderStatusCodes(status) {
  const entries = Object.entries(status.byStatus ?? {});
  const box = $('status-codes');
  if (entries.length === 0) {
    box.replaceChildren(el('p', { class: 'empty', text: 'No responses yet.' }));
    return;
  }
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  const max = Math.max(...entries.map(([, n]) => n));
  box.replaceChildren(
    ...entries.map(([code, count]) => {
      const fill = el('div', { class: `bar-fill ${statusClass(code)}` });
      fill.style.width = `${Math.max(1, (count / max) * 100)}%`; // CSSOM, allowed by the CSP (no inline style attribute)
      return el('div', { class: 'bar-row' }, [
        el('span', { class: `bar-code status ${statusClass(code)}`, text: code }),
        el('div', { class: 'bar-track' }, [fill]),
        el('span', { class: 'bar-count', text: `${fmt(count)} · ${Math.round((count / total) * 100)}%` }),
      ]);
    }),
  );
}

// ---------- cluster (only when this queue server is a cluster member) ----------

/** Polls the cluster view; the card stays hidden for a queue server on its own (the answer is null). */
async function pollCluster() {
  try {
    const response = await fetch(API.cluster, { credentials: 'same-origin', cache: 'no-store' });
    if (response.ok) {
      const view = await response.json();
      if (view === null) return; // not a cluster member: no more polling
      renderCluster(view);
    }
  } catch {
    // the next poll tries again
  }
  setTimeout(pollCluster, CLUSTER_EVERY_MS);
}

function renderCluster(view) {
  $('cluster-card').hidden = false;
  $('cluster-summary').textContent = `(${view.partitions} partitions, this server: ${view.self.partition})`;
  $('cluster').tBodies[0].replaceChildren(
    ...view.members.map((m) =>
      el('tr', {}, [
        el('td', { class: 'head', text: String(m.partition) }),
        el('td', { class: 'muted', 'data-label': 'server', text: m.owner?.url ?? 'no owner: its links wait in Redis' }),
        el('td', { 'data-label': 'state', text: m.state }),
        el('td', { class: 'num', 'data-label': 'fetched', text: fmt(m.counters?.pagesFetched) }),
        el('td', { class: 'num', 'data-label': 'queued', text: fmt(m.counters?.frontierSize) }),
        el('td', { class: 'num', 'data-label': 'leased', text: fmt(m.counters?.itemsLeased) }),
        el('td', { class: 'num', 'data-label': 'links out', text: fmt(m.counters?.linksForwarded) }),
        el('td', { class: 'num', 'data-label': 'links in', text: fmt(m.counters?.linksReceived) }),
        el('td', { class: 'num', 'data-label': 'backlog', text: fmt(m.backlog) }),
      ]),
    ),
  );
  $('cluster-control').textContent = view.control;
  $('cluster-sum-fetched').textContent = fmt(view.sum.pagesFetched);
  $('cluster-sum-queued').textContent = fmt(view.sum.frontierSize);
  $('cluster-sum-leased').textContent = fmt(view.sum.itemsLeased);
  $('cluster-sum-out').textContent = fmt(view.sum.linksForwarded);
  $('cluster-sum-in').textContent = fmt(view.sum.linksReceived);
  $('cluster-sum-backlog').textContent = fmt(view.sum.backlog);
}

function renderFetchers(status, now) {
  const body = $('fetchers').tBodies[0];
  const fetchers = [...status.fetchers].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  const staleAfter = (status.config?.leaseMs ?? 60_000) * 2;
  $('fetcher-count').textContent = fetchers.length === 0 ? '' : `(${fetchers.length})`;
  if (fetchers.length === 0) {
    body.replaceChildren(el('tr', { class: 'empty' }, [el('td', { colSpan: 8, text: 'No fetcher has connected yet.' })]));
    return;
  }
  body.replaceChildren(
    ...fetchers.map((f) => {
      const silent = serverNow() - f.lastSeen > staleAfter;
      return el('tr', {}, [
        el('td', { class: 'head', text: f.name, title: f.id }),
        el('td', { class: 'muted', 'data-label': 'address', text: f.address }),
        el('td', { class: silent ? 'stale' : '', 'data-label': 'heartbeat', text: fmtAgo(f.lastSeen) }),
        el('td', { class: 'num', 'data-label': 'leased', text: fmt(f.itemsLeased) }),
        el('td', { class: 'num', 'data-label': 'pages/s', text: fmtRate(fetcherMeters.get(f.id)?.rate(now) ?? null) }),
        el('td', { class: 'num', 'data-label': 'fetched', text: fmt(f.pagesFetched) }),
        el('td', { class: 'num', 'data-label': 'errors', text: fmt(f.stats?.errors) }),
        el('td', { class: 'num', 'data-label': 'memory', text: fmtBytes(f.stats?.rssBytes) }),
      ]);
    }),
  );
}

function renderStorage(status) {
  const answered = status.pagesFetched + status.notModified;
  setText('c-rate304', answered === 0 ? '–' : `${Math.round((status.notModified / answered) * 1000) / 10}%`);
  setText('c-bytesSaved', fmtBytes(status.bytesSaved));
  setText('c-seen', fmt(status.seenSet?.urls));
  const trees = [['cache', status.cacheTree], ['crawl db', status.crawlDbTree]].filter(([, t]) => t !== undefined && t !== null);
  const table = $('trees');
  table.tHead.rows[0].replaceChildren(el('th'), ...trees.map(([name]) => el('th', { class: 'num', text: name })));
  const hitRate = (t) => (t.cacheHits + t.cacheMisses === 0 ? '–' : `${Math.round((t.cacheHits / (t.cacheHits + t.cacheMisses)) * 100)}%`);
  const rows = [
    ['keys', (t) => fmt(t.keys)],
    ['file size', (t) => fmtBytes(t.fileBytes)],
    ['height', (t) => fmt(t.height)],
    ['pages (free)', (t) => `${fmt(t.pages)} (${fmt(t.freePages)})`],
    ['page cache hits', hitRate],
    ['commits (txid)', (t) => fmt(t.txid)],
  ];
  table.tBodies[0].replaceChildren(...rows.map(([label, get]) => el('tr', {}, [el('td', { text: label }), ...trees.map(([, t]) => el('td', { class: 'num', text: get(t) }))])));
}

function renderRecent(status) {
  const body = $('recent').tBodies[0];
  const rows = (status.recentFetches ?? []).slice(0, RECENT_ROWS);
  if (rows.length === 0) {
    body.replaceChildren(el('tr', { class: 'empty' }, [el('td', { colSpan: 4, text: 'Nothing fetched yet.' })]));
    return;
  }
  body.replaceChildren(
    ...rows.map((f) => {
      const cell = el('td', { class: 'wide' }, [el('span', { class: 'url', text: f.url, title: f.url })]);
      if (f.title !== null && f.title !== undefined && f.title !== '') cell.append(el('span', { class: 'title', text: f.title, title: f.title }));
      // Every answer the crawl archived has a cached copy (served sandboxed, routes.ts /admin/cache).
      if (f.status !== null && f.status !== undefined && status.warcRecords > 0) {
        cell.append(el('a', { class: 'cached', href: `/admin/cache?url=${encodeURIComponent(f.url)}`, target: '_blank', rel: 'noopener noreferrer', text: 'cached copy', title: `Petrel's cached copy of ${f.url}` }));
      }
      return el('tr', {}, [
        el('td', { class: 'muted', 'data-label': 'time', text: fmtClock(f.at) }),
        el('td', { class: `num status ${statusClass(f.status)}`, 'data-label': 'status', text: f.status ?? '—' }),
        el('td', { class: 'num', 'data-label': 'bytes', text: fmtBytes(f.bytes) }),
        cell,
      ]);
    }),
  );
}

function renderErrors(status) {
  const body = $('errors').tBodies[0];
  const rows = (status.recentErrors ?? []).slice(0, RECENT_ROWS);
  if (rows.length === 0) body.replaceChildren(el('tr', { class: 'empty' }, [el('td', { colSpan: 2, text: 'No errors.' })]));
  else {
    body.replaceChildren(
      ...rows.map((e) =>
        el('tr', {}, [
          el('td', { class: 'muted', 'data-label': 'time', text: fmtClock(e.at) }),
          el('td', { class: 'wide' }, [el('span', { class: 'code', text: e.code }), el('span', { class: 'url', text: e.url, title: e.url })]),
        ]),
      ),
    );
  }
  const codes = Object.entries(status.errorsByCode ?? {});
  $('error-codes').replaceChildren(...codes.map(([code, n]) => el('span', { class: 'chip', text: `${code} ${fmt(n)}` })));
}

function renderHosts(status) {
  const body = $('hosts').tBodies[0];
  const hosts = status.hosts?.busiest ?? [];
  if (hosts.length === 0) {
    body.replaceChildren(el('tr', { class: 'empty' }, [el('td', { colSpan: 6, text: 'No host requested yet.' })]));
    return;
  }
  body.replaceChildren(
    ...hosts.map((h) =>
      el('tr', {}, [
        el('td', { class: 'wide head' }, [el('span', { class: 'url', text: h.origin, title: h.origin })]),
        el('td', { class: 'num', 'data-label': 'requests', text: h.overcount > 0 ? `≤${fmt(h.requests)}` : fmt(h.requests) }),
        el('td', { class: 'num', 'data-label': 'errors', text: fmt(h.errors) }),
        el('td', { class: 'num', 'data-label': 'bytes', text: fmtBytes(h.bytes) }),
        el('td', { class: 'num', 'data-label': 'queued', text: fmt(h.queued) }),
        el('td', { 'data-label': 'now', title: h.active ? 'being fetched now' : 'not fetched right now' }, [el('span', { class: h.active ? 'dot on' : 'dot' })]),
      ]),
    ),
  );
}

/** Hosts whose requests keep failing (queue-server/frontier/host-backoff.ts): why, and until when. */
function renderBackedOff(status) {
  const hosts = status.backedOffHosts ?? [];
  if (hosts.length === 0) {
    $('backed-off').replaceChildren(el('li', { class: 'muted', text: 'No host is failing.' }));
    return;
  }
  $('backed-off').replaceChildren(
    ...hosts.map((h) => {
      const state = h.gaveUp ? `given up for this pass, ${fmt(h.givenUpUrls)} URLs recorded host-failing` : `backed off until ${fmtClock(h.until)}`;
      return el('li', {}, [el('span', { class: 'url', text: h.origin, title: h.origin }), el('span', { class: 'muted', text: ` ${h.code} ${fmt(h.failuresInRow)} times in a row: ${state}` })]);
    }),
  );
}

/** URL shapes found to be infinite spaces (queue-server/admission/url-shape.ts). */
function renderTrapShapes(status) {
  const traps = status.trapShapes ?? [];
  if (traps.length === 0) {
    $('trap-shapes').replaceChildren(el('li', { class: 'muted', text: 'None found.' }));
    return;
  }
  $('trap-shapes').replaceChildren(
    ...traps.map((t) =>
      el('li', {}, [el('span', { class: 'url', text: t.shape, title: t.shape }), el('span', { class: 'muted', text: ` ${trapReason(t)}, ${fmt(t.refused)} URLs refused` })]),
    ),
  );
}

/** Why a shape is a trap, in words: the rule that found it and its figures. */
function trapReason(t) {
  if (t.reason === 'fan-out') return `links lead only to new URLs of it: ${fmt(t.onwardPages)} of ${fmt(t.pages)} pages, ${fmt(t.newOfShape)} new URLs of it, ${fmt(t.newElsewhere)} elsewhere`;
  return `near-duplicates: ${fmt(t.nearDuplicates)} of ${fmt(t.pages)} pages the same`;
}

function renderSettings(status) {
  const config = status.config ?? {};
  const seeds = config.seeds ?? [];
  const shown = seeds.slice(0, 20).map((seed) => el('li', { text: seed }));
  if (seeds.length > 20) shown.push(el('li', { class: 'muted', text: `and ${fmt(seeds.length - 20)} more` }));
  if (seeds.length === 0) shown.push(el('li', { class: 'muted', text: 'no seeds: start a crawl below' }));
  $('seeds').replaceChildren(...shown);
  const items = [
    ['mode', config.once ? 'one pass (exits when done)' : 'continuous'],
    ['scope', config.scope],
    ['max depth', noLimit(config.maxDepth)],
    ['max pages', noLimit(config.maxPages)],
    ['delay', `${fmt(config.delayMs)} ms`],
    ['host concurrency', fmt(config.hostConcurrency)],
    ['lease', `${fmt(config.leaseMs)} ms`],
    ['URLs per slot', fmt(config.slotUrls)],
  ];
  if (config.order !== undefined) items.splice(2, 0, ['order', config.order]);
  $('settings').replaceChildren(...items.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v ?? '–' })]));
}

let formTouched = false;

function renderControls(status) {
  const control = status.control;
  $('btn-pause').disabled = control !== 'active';
  $('btn-resume').disabled = control !== 'paused';
  $('btn-stop').disabled = control === 'stopped';
  if (!formTouched && status.config !== undefined) {
    const c = status.config;
    $('f-scope').value = c.scope;
    $('f-delayMs').value = String(c.delayMs);
    $('f-hostConcurrency').value = String(c.hostConcurrency);
    $('f-maxDepth').value = c.maxDepth === null ? '' : String(c.maxDepth);
    $('f-maxPages').value = c.maxPages === null ? '' : String(c.maxPages);
    if (c.order !== undefined) $('f-order').value = c.order;
  }
}

/** What depends on the clock only (ages, rates), redrawn each second between snapshots. */
function tick() {
  chartTick();
  if (latest === null) return;
  const now = Date.now();
  setText('c-rateNow', fmtRate(rateNow(latest, now)));
  renderFetchers(latest, now);
}

// ---------- the live stream ----------

let source = null;
let silenceTimer = null;
let retryMs = 1000;

function setLive(value, text) {
  live = value;
  const node = $('connection');
  node.dataset.live = String(value);
  node.textContent = text;
}

function heard() {
  clearTimeout(silenceTimer);
  silenceTimer = setTimeout(() => {
    // Nothing at all (not even a ping) for a while: the connection is dead without the browser knowing.
    setLive(false, 'reconnecting');
    openStream();
  }, STREAM_SILENCE_MS);
}

function openStream() {
  if (source !== null) source.close();
  source = new EventSource(API.stream);
  source.addEventListener('open', () => {
    retryMs = 1000;
    setLive(true, 'live');
    heard();
  });
  source.addEventListener('status', (event) => {
    heard();
    setLive(true, 'live');
    render(JSON.parse(event.data));
  });
  source.addEventListener('ping', (event) => {
    heard();
    const { serverNow: at } = JSON.parse(event.data);
    if (typeof at === 'number') serverOffsetMs = at - Date.now();
  });
  source.addEventListener('error', () => {
    setLive(false, 'reconnecting');
    // The browser retries by itself unless it gave up (an answer other than a stream, e.g. 401).
    if (source.readyState === EventSource.CLOSED) {
      setTimeout(async () => {
        if (await checkSession()) openStream();
      }, retryMs);
      retryMs = Math.min(retryMs * 2, 30_000);
    }
  });
}

/** True when the session is alive; sends the browser to the login form when it is not. */
async function checkSession() {
  try {
    const response = await fetch(API.session, { credentials: 'same-origin', cache: 'no-store' });
    if (response.status === 401) {
      location.assign(`${LOGIN}?m=expired`);
      return false;
    }
    if (!response.ok) return true; // the server is there but unwell: keep trying
    csrfToken = (await response.json()).csrfToken;
    return true;
  } catch {
    return true; // the server is unreachable: keep trying
  }
}

// ---------- controls ----------

async function post(action, body, messageId) {
  const message = $(messageId);
  message.className = 'message';
  message.textContent = 'working…';
  try {
    const response = await fetch(API.control(action), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrfToken ?? '' },
      body: JSON.stringify(body ?? {}),
    });
    if (response.status === 401) {
      location.assign(`${LOGIN}?m=expired`);
      return null;
    }
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      message.className = 'message error';
      message.textContent = answer?.error?.message ?? `failed (HTTP ${response.status})`;
      return null;
    }
    message.className = 'message ok';
    message.textContent = '';
    return answer;
  } catch (error) {
    message.className = 'message error';
    message.textContent = `could not reach the queue server (${error instanceof Error ? error.message : 'network error'})`;
    return null;
  }
}

function lines(text) {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

function optionalInteger(id) {
  const raw = $(id).value.trim();
  return raw === '' ? null : Number(raw);
}

function wireControls() {
  $('btn-pause').addEventListener('click', async () => {
    const answer = await post('pause', {}, 'control-message');
    if (answer !== null) $('control-message').textContent = 'Paused: no new work is handed out; leases out finish.';
  });
  $('btn-resume').addEventListener('click', async () => {
    const answer = await post('resume', {}, 'control-message');
    if (answer !== null) $('control-message').textContent = 'Resumed.';
  });
  $('btn-stop').addEventListener('click', async () => {
    if (!confirm('Stop the crawl? Queued URLs are dropped (they stay known); leases out finish.')) return;
    const answer = await post('stop', {}, 'control-message');
    if (answer !== null) $('control-message').textContent = `Stopped: ${fmt(answer.dropped)} queued URLs dropped (they stay known: starting a crawl continues them).`;
  });

  const crawlForm = $('crawl-form');
  crawlForm.addEventListener('input', () => (formTouched = true));
  crawlForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = {
      seeds: lines($('f-seeds').value),
      scope: $('f-scope').value,
      maxDepth: optionalInteger('f-maxDepth'),
      maxPages: optionalInteger('f-maxPages'),
      order: $('f-order').value,
    };
    const delay = optionalInteger('f-delayMs');
    const concurrency = optionalInteger('f-hostConcurrency');
    if (delay !== null) body.delayMs = delay;
    if (concurrency !== null) body.hostConcurrency = concurrency;
    $('btn-crawl').disabled = true;
    const answer = await post('crawl', body, 'crawl-message');
    $('btn-crawl').disabled = false;
    if (answer !== null) {
      $('crawl-message').textContent =
        `Crawl started (${answer.state}): ${fmt(answer.queued)} URLs queued, the seeds and the known URLs in its scope not fetched yet` +
        (answer.waiting > 0 ? `; ${fmt(answer.waiting)} wait for their next fetch.` : '.');
      formTouched = false;
    }
  });

  $('inject-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const answer = await post('inject', { urls: lines($('f-urls').value) }, 'inject-message');
    if (answer === null) return;
    const rejected = answer.rejected.map((r) => `${r.url}: ${r.reason ?? r.code} (${r.code})`);
    const message = $('inject-message');
    message.textContent = `${fmt(answer.admitted)} admitted` + (rejected.length > 0 ? `; refused: ${rejected.join('; ')}` : '');
    if (rejected.length > 0) message.className = 'message error';
    else $('f-urls').value = '';
  });

  $('logout').addEventListener('click', async () => {
    try {
      await fetch(API.logout, { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrfToken ?? '' } });
    } finally {
      location.assign(`${LOGIN}?m=logged-out`);
    }
  });
}

/**
 * The start form's bounds and choices come from the crawl settings table (GET /admin/api/settings), so
 * the page offers what the queue server accepts; an empty no-limit field means no limit. The values
 * shown are the running crawl's (renderControls), which a fresh queue server takes from the same table.
 */
async function loadSettings() {
  const answer = await getJson(API.settings);
  if (answer === null) return;
  for (const setting of answer.settings) {
    const field = document.getElementById(`f-${setting.name}`);
    if (field === null) continue;
    field.title = setting.help;
    if (setting.kind === 'integer') {
      field.min = String(setting.min);
      if (setting.max !== null) field.max = String(setting.max);
      if (setting.noLimit) field.placeholder = setting.default === null ? 'no limit' : String(setting.default);
    } else if (setting.kind === 'choice') {
      // The choices are the table's; the page only words them (an option's text in index.html).
      const labels = new Map([...field.options].map((option) => [option.value, option.textContent]));
      field.replaceChildren(...setting.choices.map((value) => el('option', { value, text: labels.get(value) ?? value })));
      field.value = setting.default;
    }
  }
}

// ---------- start ----------

async function main() {
  if (!(await checkSession()) || csrfToken === null) {
    // No session (or no answer yet): checkSession navigated away, or retry shortly.
    setTimeout(main, 2000);
    return;
  }
  wireControls();
  await loadSettings();
  await loadHistory();
  makeChart();
  openStream();
  setInterval(tick, 1000);
  void pollCluster();
}

main();
