import type { RequestListener } from 'node:http';
import { inject, type InjectOptions, type Response as InjectedResponse } from 'light-my-request';
import type { App } from '../http/app-instance.js';
import { trackUnusedConnections } from '../ops/unused-connections.js';

/**
 * What every kind of node (`vexil serve`, `vexil relay`) does around its roles, written once: it
 * serves through one request listener (the evaluation role's lean lane when it has that role,
 * which hands every other request to Fastify's own), answers {@link inject} through that same
 * listener, and closes in one order: it stops accepting (readiness fails, so load balancers stop
 * routing here), the app closes while in-flight requests finish and connections that never sent
 * a request are dropped at once, then the node's own parts close in the order it gives.
 */
export class NodeLife {
  /** False once closing has begun. */
  accepting = true;
  /** Fastify's own request listener: the lean lane's fallback. */
  readonly fastifyListener: RequestListener;
  private listener: RequestListener;
  private readonly closeUnusedConnections: () => void;

  constructor(private readonly app: App) {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a plain function: removeListener needs it as registered
    this.fastifyListener = app.routing;
    this.listener = this.fastifyListener;
    this.closeUnusedConnections = trackUnusedConnections(app.server);
  }

  /** Serves through `listener`, once the app is ready, instead of Fastify's own. */
  async serve(listener: RequestListener): Promise<void> {
    await this.app.ready();
    this.listener = listener;
    this.app.server.removeListener('request', this.fastifyListener);
    this.app.server.on('request', listener);
  }

  /** Sends a request through the node's listener, without a socket (tests, the CLI). */
  inject(injected: InjectOptions): Promise<InjectedResponse> {
    return inject(this.listener, injected);
  }

  /** Stops accepting, closes the app, then each of `parts` in order. */
  async close(...parts: (() => unknown)[]): Promise<void> {
    this.accepting = false;
    const closing = this.app.close();
    this.closeUnusedConnections();
    await closing;
    for (const close of parts) await close();
  }
}
