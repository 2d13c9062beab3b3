import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP load balancer in front of several nodes, as a relay meets one in production:
 * each new connection goes to the next target in turn; a target that refuses the connection (a
 * node that died) is skipped for the next one, and when none answers the client's connection is
 * closed. A connection whose target goes away is closed on the client's side too, so that the
 * client reconnects, and lands on a node that lives.
 */
export class RoundRobinBalancer {
  private next = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  /** @param targets the nodes' ports on 127.0.0.1 */
  constructor(private readonly targets: readonly number[]) {
    this.server = createServer((client) => {
      this.track(client);
      // Bytes a client sends before its target is connected wait until it is.
      client.pause();
      let target: Socket | undefined;
      const closeTarget = () => target?.destroy();
      client.on('error', closeTarget);
      client.on('close', closeTarget);
      const tryNext = (triesLeft: number) => {
        if (triesLeft === 0 || client.destroyed) {
          client.destroy();
          return;
        }
        const port = this.targets[this.next % this.targets.length]!;
        this.next += 1;
        const attempt = connect(port, '127.0.0.1');
        target = attempt;
        this.track(attempt);
        let connected = false;
        attempt.once('connect', () => {
          connected = true;
          client.pipe(attempt);
          attempt.pipe(client);
          client.resume();
        });
        attempt.on('error', () => {
          if (!connected) tryNext(triesLeft - 1);
        });
        attempt.on('close', () => {
          if (connected) client.destroy();
        });
      };
      tryNext(this.targets.length);
    });
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  /** Listens on a free loopback port; returns the balancer's origin. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${String((this.server.address() as AddressInfo).port)}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
