import { createServer, request as forward, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

/**
 * What a {@link SwitchableProxy} does with each request: pass it to the target, refuse the
 * connection (the target is down, as far as a client can tell), or answer a relay feed with
 * `garbage` (events that are not the relay protocol).
 */
export type ProxyMode = 'pass' | 'down' | 'garbage';

/**
 * A loopback HTTP proxy in front of a test server, switched between passing requests on,
 * dropping every connection (open ones included) and answering garbage: how the relay tests make
 * an upstream go away and come back while it keeps its data.
 */
export class SwitchableProxy {
  mode: ProxyMode = 'pass';
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly forwarded = new Set<ClientRequest>();

  constructor(private readonly target: string) {
    this.server = createServer((incoming, outgoing) => {
      if (this.mode === 'down') {
        incoming.socket.destroy();
        return;
      }
      if (this.mode === 'garbage') {
        outgoing.writeHead(200, { 'content-type': 'text/event-stream' });
        outgoing.write('event: hello\ndata: {"protocol":0,"upstream":"x"}\n\n');
        outgoing.end('event: environment\ndata: {not json\n\n');
        return;
      }
      const url = new URL(incoming.url ?? '/', this.target);
      const upstream = forward(
        url,
        { method: incoming.method, headers: incoming.headers },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      this.forwarded.add(upstream);
      upstream.on('error', () => outgoing.destroy());
      upstream.on('close', () => this.forwarded.delete(upstream));
      // A client that hangs up ends its request to the target too (a feed there would stay open).
      outgoing.on('close', () => upstream.destroy());
      incoming.pipe(upstream);
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Listens on a free loopback port; returns the proxy's origin. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${String((this.server.address() as AddressInfo).port)}`;
  }

  /** Switches mode; every open connection is dropped, so clients reconnect into the new mode. */
  switchTo(mode: ProxyMode): void {
    this.mode = mode;
    for (const socket of this.sockets) socket.destroy();
    for (const request of this.forwarded) request.destroy();
  }

  async close(): Promise<void> {
    this.switchTo('down');
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
