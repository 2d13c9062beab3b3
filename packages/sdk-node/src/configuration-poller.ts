import type { SdkConfiguration } from '@vexil/engine';

/** The outcome of one download of `GET /v1/sdk/flags`. */
export type FetchOutcome =
  | { kind: 'changed'; configuration: SdkConfiguration }
  | { kind: 'unchanged' }
  | { kind: 'failed'; error: Error; status?: number };

/** Where and how the configuration is downloaded. */
export interface PollerOptions {
  baseUrl: string;
  sdkKey: string;
  requestTimeoutMs: number;
  fetch: typeof fetch;
}

/**
 * Downloads the environment configuration (spec: Server-SDK environment configuration), sending
 * the last `ETag` as `If-None-Match` so an unchanged configuration costs a 304 and no parsing.
 * Never throws: every failure is returned as `{ kind: 'failed' }`.
 */
export class ConfigurationPoller {
  private etag: string | null = null;

  constructor(private readonly options: PollerOptions) {}

  async fetchOnce(): Promise<FetchOutcome> {
    const { baseUrl, sdkKey, requestTimeoutMs } = this.options;
    const headers: Record<string, string> = { authorization: sdkKey, accept: 'application/json' };
    if (this.etag) headers['if-none-match'] = this.etag;
    try {
      const response = await this.options.fetch(`${baseUrl}/v1/sdk/flags`, {
        headers,
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      if (response.status === 304) return { kind: 'unchanged' };
      if (response.status !== 200) {
        await response.body?.cancel();
        return {
          kind: 'failed',
          status: response.status,
          error: new Error(`GET /v1/sdk/flags answered ${response.status}`),
        };
      }
      const configuration = (await response.json()) as SdkConfiguration;
      this.etag = response.headers.get('etag');
      return { kind: 'changed', configuration };
    } catch (error) {
      return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
    }
  }
}
