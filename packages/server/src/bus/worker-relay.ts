import cluster from 'node:cluster';

/**
 * How one worker process of `vexil serve --workers` reaches the others (design record 029): a
 * notice sent by one is delivered to every worker, the sender included, as NOTIFY delivers to
 * every listener.
 */
export interface NoticeRelay {
  /** Hands a notice (a JSON string, as NOTIFY would carry) to every worker. */
  send(payload: string): void;
  /** Calls `receive` with every notice; returns how to stop. */
  onNotice(receive: (payload: string) => void): () => void;
}

/** The IPC message that carries a notice from a worker to the primary and on to the workers. */
interface RelayedNotice {
  vexilNotice: string;
}

function isRelayedNotice(message: unknown): message is RelayedNotice {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as Partial<RelayedNotice>).vexilNotice === 'string'
  );
}

/**
 * The worker's side of the relay: notices go to the cluster primary over the IPC channel that
 * `node:cluster` opens. A notice sent while the channel is closing (shutdown) is dropped; the
 * periodic version check is the safety net, as for a lost NOTIFY.
 */
export function clusterWorkerRelay(): NoticeRelay {
  return {
    send(payload) {
      if (process.connected) process.send?.({ vexilNotice: payload } satisfies RelayedNotice);
    },
    onNotice(receive) {
      const listener = (message: unknown) => {
        if (isRelayedNotice(message)) receive(message.vexilNotice);
      };
      process.on('message', listener);
      return () => process.off('message', listener);
    },
  };
}

/** The primary's side: every notice from a worker is passed to every worker alive. */
export function relayNoticesBetweenWorkers(): void {
  cluster.on('message', (_sender, message: unknown) => {
    if (!isRelayedNotice(message)) return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker?.isConnected()) worker.send(message);
    }
  });
}
