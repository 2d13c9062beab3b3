import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * How long the primary waits for every worker's metrics (ms). Prometheus scrapes with a 10 s
 * timeout by default: a node with a stuck worker answers 503 well within it.
 */
export const METRICS_COLLECTION_TIMEOUT_MS = 2_000;

/**
 * How much longer a worker waits for the primary's answer than the primary waits for the
 * workers: the primary always answers first, unless it is gone.
 */
const PRIMARY_ANSWER_MARGIN_MS = 1_000;

/** One registry's metrics as `getMetricsAsJSON` gives them and `AggregatorRegistry.aggregate` takes them. */
type RegistryMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/**
 * The IPC messages of one scrape, tagged with `vexilMetrics` so that neither the notice relay
 * (`vexilNotice`) nor anything else on the channel takes them for its own:
 * a worker asks for the node's metrics (`scrape`), the primary asks every worker for its own
 * (`collect`), each answers (`collected`), and the primary answers the asking worker (`scraped`).
 */
type MetricsMessage =
  | { vexilMetrics: 'scrape'; scrapeId: number }
  | { vexilMetrics: 'collect'; collectionId: number }
  | { vexilMetrics: 'collected'; collectionId: number; metrics: RegistryMetrics }
  | { vexilMetrics: 'collected'; collectionId: number; error: string }
  | { vexilMetrics: 'scraped'; scrapeId: number; text: string }
  | { vexilMetrics: 'scraped'; scrapeId: number; error: string };

function isMetricsMessage(message: unknown): message is MetricsMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as Partial<MetricsMessage>).vexilMetrics === 'string'
  );
}

/** The node's metrics could not be collected: `/metrics` answers 503 with this message. */
export class NodeMetricsUnavailable extends Error {}

/**
 * A worker's side of `/metrics` under `vexil serve --workers` (design record 029): it answers
 * the primary's requests for this worker's metrics, and asks the primary for the whole node's.
 */
export class ClusterWorkerMetrics {
  private nextScrapeId = 0;
  private readonly scrapes = new Map<
    number,
    { resolve: (text: string) => void; reject: (error: Error) => void }
  >();
  private readonly listener = (message: unknown) => {
    if (!isMetricsMessage(message)) return;
    if (message.vexilMetrics === 'collect') this.report(message.collectionId);
    else if (message.vexilMetrics === 'scraped') {
      const scrape = this.scrapes.get(message.scrapeId);
      if (scrape === undefined) return;
      if ('text' in message) scrape.resolve(message.text);
      else scrape.reject(new NodeMetricsUnavailable(message.error));
    }
  };

  constructor(private readonly registry: Registry) {
    process.on('message', this.listener);
  }

  /**
   * Every worker's metrics, aggregated by the primary in Prometheus text format. Rejects with
   * {@link NodeMetricsUnavailable} when a worker or the primary does not answer in time.
   */
  nodeMetrics(): Promise<string> {
    if (!process.connected)
      return Promise.reject(new NodeMetricsUnavailable('The primary process is not reachable.'));
    const scrapeId = this.nextScrapeId++;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.scrapes.delete(scrapeId);
        reject(new NodeMetricsUnavailable('The primary process did not answer.'));
      }, METRICS_COLLECTION_TIMEOUT_MS + PRIMARY_ANSWER_MARGIN_MS);
      const settle = () => {
        clearTimeout(timer);
        this.scrapes.delete(scrapeId);
      };
      this.scrapes.set(scrapeId, {
        resolve: (text) => {
          settle();
          resolve(text);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      process.send?.({ vexilMetrics: 'scrape', scrapeId } satisfies MetricsMessage);
    });
  }

  /** Stops answering the primary (the process is shutting down). */
  stop(): void {
    process.off('message', this.listener);
  }

  private report(collectionId: number): void {
    const send = (message: MetricsMessage) => {
      if (process.connected) process.send?.(message);
    };
    this.registry.getMetricsAsJSON().then(
      (metrics) => send({ vexilMetrics: 'collected', collectionId, metrics }),
      (error: unknown) =>
        send({
          vexilMetrics: 'collected',
          collectionId,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  }
}

/** The workers' answers to one scrape, while the primary waits for them. */
interface Collection {
  waitingFor: Set<Worker>;
  reports: RegistryMetrics[];
  timer: NodeJS.Timeout;
  answer: (outcome: { text: string } | { error: string }) => void;
}

/**
 * The primary's side: when a worker is scraped, the primary asks every listening worker for its
 * metrics, aggregates them by each metric's `aggregator`, and sends the text to the asking
 * worker. A worker that has not answered within {@link METRICS_COLLECTION_TIMEOUT_MS} fails the
 * scrape, named by its process id; its late answer is ignored.
 */
export function aggregateMetricsForWorkers(): void {
  let nextCollectionId = 0;
  const collections = new Map<number, Collection>();
  // A worker still starting has served nothing and may not listen for `collect` yet: it is not
  // asked until it listens.
  const listening = new Set<Worker>();
  cluster.on('listening', (worker) => listening.add(worker));
  cluster.on('exit', (worker) => listening.delete(worker));

  const finish = (collectionId: number, collection: Collection) => {
    clearTimeout(collection.timer);
    collections.delete(collectionId);
    // `aggregate` throws on an unknown aggregator: that too is an answer for the asking worker.
    Promise.resolve()
      .then(() => AggregatorRegistry.aggregate(collection.reports).metrics())
      .then(
        (text) => collection.answer({ text }),
        (error: unknown) =>
          collection.answer({ error: error instanceof Error ? error.message : String(error) }),
      );
  };

  const start = (asking: Worker, scrapeId: number) => {
    const collectionId = nextCollectionId++;
    const workers = [...listening].filter((worker) => worker.isConnected());
    const collection: Collection = {
      waitingFor: new Set(workers),
      reports: [],
      timer: setTimeout(() => {
        collections.delete(collectionId);
        const pids = [...collection.waitingFor].map((worker) => worker.process.pid).join(', ');
        const within = `within ${METRICS_COLLECTION_TIMEOUT_MS / 1000} s`;
        collection.answer({
          error:
            collection.waitingFor.size === 1
              ? `Worker process ${pids} did not send its metrics ${within}.`
              : `Worker processes ${pids} did not send their metrics ${within}.`,
        });
      }, METRICS_COLLECTION_TIMEOUT_MS),
      answer: (outcome) => {
        if (asking.isConnected())
          asking.send({ vexilMetrics: 'scraped', scrapeId, ...outcome } satisfies MetricsMessage);
      },
    };
    collections.set(collectionId, collection);
    for (const worker of workers)
      worker.send({ vexilMetrics: 'collect', collectionId } satisfies MetricsMessage);
    // Every worker exited since the asking one was scraped: an empty registry, without waiting.
    if (workers.length === 0) finish(collectionId, collection);
  };

  cluster.on('message', (sender: Worker, message: unknown) => {
    if (!isMetricsMessage(message)) return;
    if (message.vexilMetrics === 'scrape') start(sender, message.scrapeId);
    else if (message.vexilMetrics === 'collected') {
      const collection = collections.get(message.collectionId);
      if (collection === undefined) return;
      if ('error' in message) {
        clearTimeout(collection.timer);
        collections.delete(message.collectionId);
        collection.answer({
          error: `Worker process ${sender.process.pid} could not read its metrics: ${message.error}`,
        });
        return;
      }
      collection.reports.push(message.metrics);
      collection.waitingFor.delete(sender);
      if (collection.waitingFor.size === 0) finish(message.collectionId, collection);
    }
  });
}
