/**
 * Which scenarios run, and what is expected of them (design record 020). Keys are scenario names,
 * or a feature name for a whole feature; every key must name something in the suites.
 */

/** Scenarios not run, with the reason: they test the SDK itself, or differ from Vexil by design. */
export const NOT_RUN: Readonly<Record<string, string>> = {
  'Context merging precedence':
    'Merging API, transaction, client, invocation and hook context happens in the SDK before a provider is called; a flag service only receives the merged context.',
  'Provider not ready error':
    'Needs a provider held in NOT_READY: provider states are kept by the SDK, which answers PROVIDER_NOT_READY without asking the provider.',
  'Provider in fatal state error':
    'Needs a provider held in FATAL: provider states are kept by the SDK, which answers PROVIDER_FATAL without asking the provider.',
  'Provider status accessibility':
    'Needs providers held in each state (NOT_READY, ERROR, FATAL, STALE): test doubles inside the SDK, not a flag service.',
  'CACHED reason':
    'CACHED is set by a provider answering from its own cache; Vexil evaluates every request, and the stock server provider keeps no cache.',
  'Evaluation options with hooks': 'Hooks run inside the SDK.',
  'Evaluation context immutability':
    "Immutability of the caller's context and of the returned details is the SDK's.",
  'DISABLED reason':
    "Differs by design: a disabled Vexil flag serves its off variation (a configured value) with reason DISABLED; the scenario expects the caller's default, as in flagd, where a disabled flag has no value. ofrep.test.ts checks DISABLED.",
};

/** Scenarios run through the server provider only, with the reason. */
export const SERVER_PROVIDER_ONLY: Readonly<Record<string, string>> = {
  'Asynchronous flag evaluation':
    'The web SDK evaluates synchronously, from the flags fetched for the static context.',
};

/** Scenarios run and expected to fail: what Vexil does not do yet. A pass fails the test run. */
export const KNOWN_GAPS: Readonly<Record<string, string>> = {};
