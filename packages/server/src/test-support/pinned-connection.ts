import { Agent, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { SseReader } from './sse-reader.js';

/**
 * One kept-alive connection: `node:cluster` hands each new connection to a worker, and every
 * request on it is served by that worker (`--workers`, design record 029).
 */
export class PinnedConnection {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  send(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const outgoing = httpRequest(
        `${this.baseUrl}${path}`,
        { method, agent: this.agent, headers },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  /** Evaluates flag `beta` for user `u` with `sdkKey`; returns its value. */
  async evaluate(sdkKey: string): Promise<unknown> {
    const { text } = await this.send(
      'POST',
      '/v1/sdk/evaluate',
      { authorization: sdkKey, 'content-type': 'application/json' },
      JSON.stringify({ flagKey: 'beta', context: { userId: 'u' } }),
    );
    return (JSON.parse(text) as { value: unknown }).value;
  }

  /**
   * Opens an SSE stream (`GET path`) on this connection, so on this connection's worker; the
   * connection is the stream's until the reader is closed.
   */
  stream(path: string, headers: Record<string, string>): Promise<SseReader> {
    return new Promise((resolve, reject) => {
      const abort = new AbortController();
      const outgoing = httpRequest(
        `${this.baseUrl}${path}`,
        { agent: this.agent, headers, signal: abort.signal },
        (response) => {
          const body = Readable.toWeb(response) as ReadableStream<Uint8Array>;
          resolve(new SseReader(new Response(body, { status: response.statusCode }), abort));
        },
      );
      outgoing.on('error', reject);
      outgoing.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The process ids in the JSON log lines that contain `text`, in order. */
export function pidsLogging(output: string[], text: string): number[] {
  return output
    .join('')
    .split('\n')
    .filter((line) => line.includes(text))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);
}

/** The process ids in the request log lines of `GET /readyz`, in order. */
export const readinessPids = (output: string[]) => pidsLogging(output, '"route":"/readyz"');

/** The process ids of the workers that started listening, in order. */
export const listeningPids = (output: string[]) => pidsLogging(output, 'Server listening');

/** Evaluate requests counted in a `/metrics` text, over every status. */
export function evaluateCount(metrics: string): number {
  return metrics
    .split('\n')
    .filter((line) =>
      line.startsWith(
        'vexil_http_request_duration_seconds_count{method="POST",route="/v1/sdk/evaluate",',
      ),
    )
    .reduce((total, line) => total + Number(line.split(' ').at(-1)), 0);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
