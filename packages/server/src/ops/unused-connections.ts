import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Tracks connections that were opened but never carried a request, so that shutdown can close
 * them. Node 20's `server.close()` counts such a connection neither idle nor busy and waits for it
 * until `headersTimeout` (a minute); load balancers and HTTP clients open spare connections like
 * that. Closing them loses nothing: no request was ever sent on them.
 *
 * @returns a function that destroys every connection still unused
 */
export function trackUnusedConnections(server: Server): () => void {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
  return () => {
    for (const socket of unused) socket.destroy();
  };
}
