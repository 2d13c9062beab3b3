import type { EvaluationContext, EvaluationDetails, FlagValue, JsonValue } from '@openfeature/core';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature } from '@openfeature/web-sdk';

/** The flag types the suites name. */
export type FlagType = 'Boolean' | 'String' | 'Integer' | 'Float' | 'Object';

/** A stock OpenFeature client, through one of the stock OFREP providers. */
export interface Evaluator {
  /** The provider's status as the SDK reports it (`READY`, …). */
  status(): string;
  /** Evaluates with details for `context`, with the client method for `type`. */
  evaluate(
    type: FlagType,
    key: string,
    fallback: FlagValue,
    context: EvaluationContext,
  ): Promise<EvaluationDetails<FlagValue>>;
}

/** One call per client method; OpenFeature has one number type for Integer and Float. */
interface TypedCalls<R> {
  boolean: (fallback: boolean) => R;
  string: (fallback: string) => R;
  number: (fallback: number) => R;
  object: (fallback: JsonValue) => R;
}

/** Makes the call for `type`; the fallback has that type, as the scenario wrote it so. */
function byType<R>(type: FlagType, fallback: FlagValue, calls: TypedCalls<R>): R {
  switch (type) {
    case 'Boolean':
      return calls.boolean(fallback as boolean);
    case 'String':
      return calls.string(fallback as string);
    case 'Integer':
    case 'Float':
      return calls.number(fallback as number);
    case 'Object':
      return calls.object(fallback);
  }
}

const bearer = (sdkKey: string): [string, string][] => [['Authorization', `Bearer ${sdkKey}`]];

/** `@openfeature/server-sdk` with `@openfeature/ofrep-provider`: one request per evaluation. */
export async function serverEvaluator(baseUrl: string, sdkKey: string): Promise<Evaluator> {
  await OpenFeature.setProviderAndWait(
    'conformance',
    new OFREPProvider({ baseUrl, headers: bearer(sdkKey) }),
  );
  const client = OpenFeature.getClient('conformance');
  return {
    status: () => client.providerStatus,
    evaluate: (type, key, fallback, context) =>
      byType<Promise<EvaluationDetails<FlagValue>>>(type, fallback, {
        boolean: (value) => client.getBooleanDetails(key, value, context),
        string: (value) => client.getStringDetails(key, value, context),
        number: (value) => client.getNumberDetails(key, value, context),
        object: (value) => client.getObjectDetails(key, value, context),
      }),
  };
}

/**
 * `@openfeature/web-sdk` with `@openfeature/ofrep-web-provider`, in static-context mode: setting
 * the context fetches every flag for it in one bulk request, and flags are then read from that.
 */
export async function webEvaluator(baseUrl: string, sdkKey: string): Promise<Evaluator> {
  await WebOpenFeature.setProviderAndWait(
    'conformance',
    // No polling and no local cache: each scenario sets its context, which fetches afresh.
    new OFREPWebProvider({
      baseUrl,
      headers: bearer(sdkKey),
      cacheMode: 'disabled',
      pollInterval: 0,
    }),
  );
  const client = WebOpenFeature.getClient('conformance');
  return {
    status: () => client.providerStatus,
    evaluate: async (type, key, fallback, context) => {
      await WebOpenFeature.setContext('conformance', context);
      return byType<EvaluationDetails<FlagValue>>(type, fallback, {
        boolean: (value) => client.getBooleanDetails(key, value),
        string: (value) => client.getStringDetails(key, value),
        number: (value) => client.getNumberDetails(key, value),
        object: (value) => client.getObjectDetails(key, value),
      });
    },
  };
}

/** Removes the providers of both SDKs. */
export async function closeEvaluators(): Promise<void> {
  await OpenFeature.clearProviders();
  await WebOpenFeature.clearProviders();
}
