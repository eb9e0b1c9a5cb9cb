/**
 * Debian's nginx serving one directory on one loopback address, started by the benchmark itself: its
 * own config file, pid file, error log, access log and temp paths, all in a private directory. Never
 * the system service (/etc/nginx/nginx.conf is not read; only /etc/nginx/mime.types is included).
 *
 * nginx runs in the foreground (`daemon off`) as a child of this process, with one worker, so its CPU
 * can be read from /proc and it cannot outlive the benchmark unnoticed: stop() ends it with SIGQUIT
 * (graceful) and then SIGTERM, and an 'exit' hook kills it if the benchmark dies first.
 *
 * Responses: the files as they are (no gzip: nginx's default, and what a plain static site does; with
 * `gzip` the text types are gzip-compressed, level 6, for a client that accepts it, as most sites do), with
 * ETag and Last-Modified (nginx's defaults) and `Cache-Control: max-age=<expiresS>` (`expires`), so that
 * a crawler that keeps validators finds its copies stale after `expiresS` and revalidates with
 * If-None-Match / If-Modified-Since (answered 304). robots.txt allows everything. Redirects (a directory
 * without its slash) are relative (`absolute_redirect off`), so they can only point back at this server.
 *
 * The access log has one line per response, written when the response ends:
 *   $msec $status $request_method $request_time $bytes_sent $connection $connection_requests $request_uri
 * `$msec` is the end of the response in seconds since the epoch (ms resolution) and `$request_time` how
 * long the request took, so start = msec - request_time.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, fstatSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { join } from 'node:path';
import { processCpuS, treePids } from './proc-tree.mjs';

export const NGINX = '/usr/sbin/nginx';

/**
 * @param {{ root: string, ip: string, dir: string, expiresS: number, gzip?: boolean }} options
 * @returns {Promise<{ origin: string, port: number, pid: number, accessLog: string, cpuS(): number,
 *                      readNewLines(): string[], stop(): Promise<void> }>}
 */
export async function startNginx({ root, ip, dir, expiresS, gzip = false }) {
  if (!/^127\.\d+\.\d+\.\d+$/.test(ip)) throw new Error(`nginx may only listen on loopback, not ${ip}`);
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  const port = await freePort(ip);
  const accessLog = join(dir, 'access.log');
  const errorLog = join(dir, 'error.log');
  writeFileSync(accessLog, '');
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, config({ root, ip, port, dir, accessLog, errorLog, expiresS, gzip }));
  // -e: the error log before the config is read (Debian's default is stderr; keep it in the dir anyway).
  const child = spawn(NGINX, ['-p', dir, '-c', conf, '-e', errorLog], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  process.once('exit', kill);
  await waitListening(ip, port, child, () => `${stderr}${existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : ''}`);

  let offset = 0;
  let carry = '';
  return {
    origin: `http://${ip}:${port}`,
    port,
    pid: child.pid,
    accessLog,
    /** user + sys of the master and its workers so far (the worker does the serving). */
    cpuS() {
      return treePids(child.pid).reduce((sum, pid) => sum + (processCpuS(pid) ?? 0), 0);
    },
    /** Access log lines written since the last call. */
    readNewLines() {
      const fd = openSync(accessLog, 'r');
      try {
        const size = fstatSync(fd).size;
        if (size <= offset) return [];
        const buffer = Buffer.allocUnsafe(size - offset);
        const read = readSync(fd, buffer, 0, buffer.length, offset);
        offset += read;
        const text = carry + buffer.toString('utf8', 0, read);
        const lines = text.split('\n');
        carry = lines.pop() ?? '';
        return lines;
      } finally {
        closeSync(fd);
      }
    },
    async stop() {
      process.off('exit', kill);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGTERM'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** One parsed access log line (see the header comment for the format), or null. */
export function parseAccessLine(line) {
  const match = /^(\d+\.\d+) (\d{3}) (\S+) (\d+\.\d+) (\d+) (\d+) (\d+) (.*)$/.exec(line);
  if (match === null) return null;
  const endMs = Number(match[1]) * 1000;
  return {
    endMs,
    startMs: endMs - Number(match[4]) * 1000,
    status: Number(match[2]),
    method: match[3],
    bytes: Number(match[5]),
    connection: Number(match[6]),
    connectionRequests: Number(match[7]),
    uri: match[8],
  };
}

function config({ root, ip, port, dir, accessLog, errorLog, expiresS, gzip }) {
  const q = (text) => `"${text.replace(/["\\$]/g, (c) => `\\${c}`)}"`;
  const tmp = (name) => q(join(dir, 'tmp', name));
  return `# Written by scripts/bench-crawl/lib/nginx.mjs for one benchmark run; removed with its directory.
daemon off;
master_process on;
worker_processes 1;
pid ${q(join(dir, 'nginx.pid'))};
error_log ${q(errorLog)} warn;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format bench '$msec $status $request_method $request_time $bytes_sent $connection $connection_requests $request_uri';
  access_log ${q(accessLog)} bench;
  client_body_temp_path ${tmp('body')};
  proxy_temp_path ${tmp('proxy')};
  fastcgi_temp_path ${tmp('fastcgi')};
  uwsgi_temp_path ${tmp('uwsgi')};
  scgi_temp_path ${tmp('scgi')};
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  server_tokens off;
  absolute_redirect off;
${gzip ? '  gzip on;\n  gzip_comp_level 6;\n  gzip_types text/plain text/css text/xml application/xml application/javascript application/json;\n' : ''}  server {
    listen ${ip}:${port};
    server_name _;
    root ${q(root)};
    index index.html;
    expires ${expiresS}s;
    location = /robots.txt {
      default_type text/plain;
      return 200 "User-agent: *\\nAllow: /\\n";
    }
  }
}
`;
}

/** A port free on `ip` right now (nginx binds it a moment later; a clash makes nginx fail loudly). */
function freePort(ip) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, ip, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitListening(ip, port, child, errors) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited with status ${child.exitCode}:\n${errors()}`);
    if (await canConnect(ip, port)) return;
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`nginx did not listen on ${ip}:${port} within 10 s:\n${errors()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function canConnect(ip, port) {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, ip);
  });
}
