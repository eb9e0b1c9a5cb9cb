/**
 * Listening: one node:http server per loopback address, all on the same port. The first binds to the
 * requested port (0: any free one), the rest to the port it got. Another process may hold that port on
 * a later address, so on EADDRINUSE everything is closed and the whole set retried on a fresh port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export type HostHandler = (hostIndex: number, req: IncomingMessage, res: ServerResponse) => void;

export class TestWebBindError extends Error {
  readonly code = 'TEST_WEB_BIND_FAILED';
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'TestWebBindError';
  }
}

export async function listenAll(
  addresses: readonly string[],
  opts: { port: number; attempts: number },
  handler: HostHandler,
): Promise<{ port: number; servers: Server[] }> {
  for (let attempt = 1; ; attempt++) {
    const servers: Server[] = [];
    try {
      let port = opts.port;
      for (const [index, address] of addresses.entries()) {
        const server = createServer((req, res) => handler(index, req, res));
        servers.push(server);
        await listen(server, port, address);
        if (index === 0) port = boundPort(server);
      }
      return { port, servers };
    } catch (error) {
      await closeServers(servers);
      const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
      // A fixed port cannot be retried elsewhere; a random one can.
      if (!inUse || opts.port !== 0 || attempt >= opts.attempts) {
        throw new TestWebBindError(`could not bind ${addresses.length} loopback hosts (attempt ${attempt}): ${String(error)}`, { cause: error });
      }
    }
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function boundPort(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  return address.port;
}

/** Stops listening and drops every connection, idle keep-alive ones included. */
export async function closeServers(servers: readonly Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          if (!server.listening) {
            server.closeAllConnections();
            resolve();
            return;
          }
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
}
