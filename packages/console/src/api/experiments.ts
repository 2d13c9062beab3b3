import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { queryKeys } from './query-keys';
import type {
  Decision,
  Direction,
  ExperimentInput,
  ExperimentResults,
  ExperimentStatus,
  MetricInput,
  MetricKind,
  Verdict,
} from './types';

// Metrics and experiments (docs/experiments.md §1–4) as the console reads and changes them.

/** Where experiments of a flag in one environment live. */
export interface ExperimentPlace {
  org: string;
  project: string;
  flag: string;
  environment: string;
}

const EXPERIMENTS =
  '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments';
const EXPERIMENT = `${EXPERIMENTS}/{experiment}` as const;

/** The path parameters of a flag's experiments in one environment. */
function placePath(place: ExperimentPlace) {
  return { org: place.org, project: place.project, flag: place.flag, env: place.environment };
}

/** A project's metric catalogue (up to 200, the console's page). */
export function useMetrics(org: string, project: string) {
  return useQuery({
    queryKey: queryKeys.metrics(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/metrics', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
}

export function createMetric(org: string, project: string, input: MetricInput) {
  return unwrap(
    api.POST('/api/v1/orgs/{org}/projects/{project}/metrics', {
      params: { path: { org, project } },
      body: input,
    }),
  );
}

export async function deleteMetric(org: string, project: string, metric: string): Promise<void> {
  await unwrap(
    api.DELETE('/api/v1/orgs/{org}/projects/{project}/metrics/{metric}', {
      params: { path: { org, project, metric } },
    }),
  );
}

/** A project's experiments, of one status or all (the Experiments page). */
export function useProjectExperiments(
  org: string,
  project: string,
  status: ExperimentStatus | undefined,
) {
  return useQuery({
    queryKey: queryKeys.experiments(org, project, status),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/experiments', {
          params: {
            path: { org, project },
            query: { limit: 200, ...(status !== undefined ? { status } : {}) },
          },
        }),
      ),
  });
}

/** The experiments of a flag in one environment. */
export function useFlagExperiments(place: ExperimentPlace) {
  const { org, project, flag, environment } = place;
  return useQuery({
    queryKey: queryKeys.flagExperiments(org, project, flag, environment),
    queryFn: () =>
      unwrap(api.GET(EXPERIMENTS, { params: { path: placePath(place), query: { limit: 200 } } })),
  });
}

/** How often a running experiment's figures are read again while its page is open (ms). */
const RESULTS_POLL_MS = 5_000;

/** One experiment. */
export function useExperiment(place: ExperimentPlace, experiment: string) {
  const { org, project, flag, environment } = place;
  return useQuery({
    queryKey: queryKeys.experiment(org, project, flag, environment, experiment),
    refetchInterval: (query) => (query.state.data?.status === 'running' ? RESULTS_POLL_MS : false),
    queryFn: () =>
      unwrap(api.GET(EXPERIMENT, { params: { path: { ...placePath(place), experiment } } })),
  });
}

/** An experiment's results, read again every few seconds while it runs. */
export function useExperimentResults(place: ExperimentPlace, experiment: string, running: boolean) {
  const { org, project, flag, environment } = place;
  return useQuery({
    queryKey: queryKeys.experimentResults(org, project, flag, environment, experiment),
    refetchInterval: running ? RESULTS_POLL_MS : false,
    queryFn: async () =>
      // openapi-fetch's answer types widen tuples to arrays; the intervals are pairs by the schema.
      (await unwrap(
        api.GET(`${EXPERIMENT}/results`, {
          params: { path: { ...placePath(place), experiment } },
        }),
      )) as ExperimentResults,
  });
}

export function createExperiment(place: ExperimentPlace, input: ExperimentInput) {
  return unwrap(api.POST(EXPERIMENTS, { params: { path: placePath(place) }, body: input }));
}

export function startExperiment(place: ExperimentPlace, experiment: string) {
  return unwrap(
    api.POST(`${EXPERIMENT}/start`, { params: { path: { ...placePath(place), experiment } } }),
  );
}

export function stopExperiment(place: ExperimentPlace, experiment: string, decision: Decision) {
  return unwrap(
    api.POST(`${EXPERIMENT}/stop`, {
      params: { path: { ...placePath(place), experiment } },
      body: { decision },
    }),
  );
}

export async function deleteExperiment(place: ExperimentPlace, experiment: string) {
  await unwrap(api.DELETE(EXPERIMENT, { params: { path: { ...placePath(place), experiment } } }));
}

/** The results page of an experiment in the console. */
export function experimentPagePath(place: ExperimentPlace, experiment: string): string {
  return `/orgs/${place.org}/projects/${place.project}/flags/${place.flag}/experiments/${place.environment}/${experiment}`;
}

/** A verdict in words, against the control's name. */
export function verdictWords(verdict: Verdict | undefined, control: string): string {
  if (verdict === 'better') return `better than ${control}`;
  if (verdict === 'worse') return `worse than ${control}`;
  if (verdict === 'inconclusive') return `no clear difference from ${control}`;
  return 'no verdict yet';
}

/** A kind in words, for tables. */
export const KIND_WORDS: Record<MetricKind, string> = {
  conversion: 'Conversion (share of users)',
  count: 'Count (events per user)',
  sum: 'Sum (per user)',
  mean: 'Mean (per event)',
};

export const DIRECTION_WORDS: Record<Direction, string> = {
  higher_is_better: 'higher is better',
  lower_is_better: 'lower is better',
};
