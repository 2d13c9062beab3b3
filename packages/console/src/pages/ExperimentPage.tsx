import { Button, Callout } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useMemo, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import {
  deleteExperiment,
  startExperiment,
  stopExperiment,
  useExperiment,
  useExperimentResults,
  verdictWords,
  type ExperimentPlace,
} from '../api/experiments';
import { queryKeys } from '../api/query-keys';
import type {
  Decision,
  Experiment,
  ExperimentResults,
  Flag,
  MetricResult,
  SeriesPoint,
} from '../api/types';
import { changeRequestPath } from '../components/change-requests/paths';
import { ConfirmButton } from '../components/ConfirmButton';
import { IntervalBar } from '../components/experiments/IntervalBar';
import {
  absoluteWords,
  percent,
  percentOfBasisPoints,
  valueWords,
  variationName,
} from '../components/experiments/words';
import { FormDialog } from '../components/FormDialog';
import { formatTime } from '../components/release-plan/time';
import { usePlace } from '../components/Shell';
import { useFormMutation } from '../components/useFormMutation';
import '../flag-pages.css';

// uPlot loads with the results page only.
const DifferenceChart = lazy(() => import('../components/experiments/DifferenceChart'));

const STATUS_WORDS = { draft: 'Draft', running: 'Running', stopped: 'Stopped' } as const;
const ROLE_WORDS = {
  primary: 'primary metric',
  secondary: 'secondary metric',
  guardrail: 'guardrail metric',
} as const;

/**
 * An experiment's results page (experiments.md §3–4): its status and split, exposed users per
 * variation, the sample-ratio-mismatch warning, one row per metric and variation with the value,
 * the difference against the control, the interval as a bar against zero and the verdict in
 * words; the primary metric's difference over time; Start (a draft), Stop with a decision, and
 * the change request a stop opened in a protected environment.
 */
export function ExperimentPage(props: {
  org: string;
  project: string;
  flag: string;
  env: string;
  experiment: string;
}) {
  const { org, project } = props;
  const place: ExperimentPlace = { org, project, flag: props.flag, environment: props.env };
  const flag = useQuery({
    queryKey: queryKeys.flagDetail(org, project, props.flag),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', {
          params: { path: { org, project, flag: props.flag } },
        }),
      ),
  });
  const experiment = useExperiment(place, props.experiment);
  const started = experiment.data !== undefined && experiment.data.status !== 'draft';
  const results = useExperimentResults(
    place,
    props.experiment,
    experiment.data?.status === 'running',
  );

  if (experiment.isError) return <p role="alert">{experiment.error.message}</p>;
  if (flag.isError) return <p role="alert">{flag.error.message}</p>;
  if (!experiment.data || !flag.data) return <p role="status">Loading…</p>;
  const data = experiment.data;
  const flagPage = `/orgs/${org}/projects/${project}/flags/${props.flag}`;
  const name = (key: string) => variationName(flag.data, key);
  return (
    <>
      <nav aria-label="Breadcrumb" className="hint">
        <Link href={`/orgs/${org}/projects/${project}/experiments`}>Experiments</Link> /{' '}
        <Link href={`${flagPage}/experiments?env=${encodeURIComponent(props.env)}`}>
          {props.flag}
        </Link>{' '}
        / {data.key}
      </nav>
      <div className="page-heading">
        <h1>{data.name}</h1>
        <span className="badge">{STATUS_WORDS[data.status]}</span>
      </div>
      <p className="hint">
        Flag <code>{data.flagKey}</code> in {data.environmentKey}; control{' '}
        {name(data.controlVariation)}; split{' '}
        {data.variations.map((v) => `${name(v.key)} ${percentOfBasisPoints(v.weight)}`).join(', ')};{' '}
        {(data.confidence * 100).toLocaleString()}% confidence; a verdict once every variation has{' '}
        {data.minimumUsers.toLocaleString()} exposed users.
      </p>
      {data.hypothesis && (
        <p>
          <strong>Hypothesis:</strong> {data.hypothesis}
        </p>
      )}
      <Lifecycle place={place} experiment={data} flag={flag.data} />
      {started && (
        <ResultsView
          experiment={data}
          flag={flag.data}
          results={results.data}
          error={results.error}
        />
      )}
    </>
  );
}

/** Status in words, Start, Stop with a decision, Delete, and a change request a stop opened. */
function Lifecycle(props: { place: ExperimentPlace; experiment: Experiment; flag: Flag }) {
  const { place, experiment, flag } = props;
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const { environments } = usePlace();
  const reviewed =
    environments.find((e) => (e.key ?? e.id) === place.environment)?.changeRequests.required ??
    false;
  const name = (key: string) => variationName(flag, key);
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({
        queryKey: queryKeys.flag(place.org, place.project, place.flag),
      }),
      queryClient.invalidateQueries({ queryKey: queryKeys.experiments(place.org, place.project) }),
    ]);
  const start = useFormMutation({
    mutationFn: async () => {
      // In a protected environment the server proposes the start in a change request.
      const started = await startExperiment(place, experiment.key);
      if (started.changeRequest)
        navigate(changeRequestPath(place.org, place.project, started.changeRequest.number));
    },
    onSuccess: refresh,
  });
  const remove = useFormMutation({
    mutationFn: () => deleteExperiment(place, experiment.key),
    onSuccess: async () => {
      await refresh();
      navigate(
        `/orgs/${place.org}/projects/${place.project}/flags/${place.flag}/experiments?env=${encodeURIComponent(place.environment)}`,
      );
    },
  });
  // The change request the last stop opened (a GET of the experiment does not name it).
  const [opened, setOpened] = useState<{ number: number } | null>(null);
  const allowed = (action: string) => experiment._actions[action]?.allowed === true;
  const changeRequest = experiment.changeRequest ?? opened;
  return (
    <section aria-labelledby="lifecycle-heading" className="experiment-lifecycle">
      <h2 id="lifecycle-heading" className="visually-hidden">
        Status
      </h2>
      <p role="status">{statusWords(experiment, name)}</p>
      {changeRequest && (
        <Callout.Root color="blue" role="note">
          <Callout.Text>
            The decision waits for review in{' '}
            <Link href={changeRequestPath(place.org, place.project, changeRequest.number)}>
              change request #{changeRequest.number}
            </Link>
            .
          </Callout.Text>
        </Callout.Root>
      )}
      <div className="actions start">
        {experiment.status === 'draft' && allowed('start') && (
          <Button type="button" disabled={start.isPending} onClick={() => start.mutate()}>
            {reviewed ? 'Request review to start' : 'Start experiment'}
          </Button>
        )}
        {experiment.status === 'running' && allowed('stop') && (
          <StopDialog
            place={place}
            experiment={experiment}
            flag={flag}
            onStopped={async (stopped) => {
              setOpened(stopped.changeRequest ?? null);
              await refresh();
            }}
          />
        )}
        {experiment.status !== 'running' && allowed('delete') && (
          <ConfirmButton
            label="Delete experiment"
            title={`Delete ${experiment.name}?`}
            description={
              experiment.status === 'draft'
                ? 'The draft is deleted; nothing was served by it.'
                : 'The experiment and its results are deleted; the flag keeps what it serves now.'
            }
            confirm={`Delete ${experiment.name}`}
            busy={remove.isPending}
            onConfirm={() => remove.mutate()}
          />
        )}
      </div>
      {(start.error ?? remove.error) && (
        <p role="alert" className="field-error">
          {(start.error ?? remove.error)?.message}
        </p>
      )}
    </section>
  );
}

function statusWords(experiment: Experiment, name: (key: string) => string): string {
  if (experiment.status === 'draft')
    return 'Draft: nothing is split yet. Start it to serve the split to the users no rule catches.';
  const since = experiment.startedAt ? ` since ${formatTime(experiment.startedAt)}` : '';
  if (experiment.status === 'running') return `Running${since}.`;
  const decision = experiment.decision;
  const what =
    decision === null
      ? ''
      : decision === 'keepControl'
        ? ` Decision: keep ${name(experiment.controlVariation)}, the control.`
        : decision === 'inconclusive'
          ? ' Decision: inconclusive, nothing shipped.'
          : ` Decision: ship ${name(decision.ship)}.`;
  const stopped = experiment.stoppedAt ? ` on ${formatTime(experiment.stoppedAt)}` : '';
  return `Stopped${stopped}.${what}`;
}

/** "Stop experiment": ship a variation, keep the control, or call it inconclusive. */
function StopDialog(props: {
  place: ExperimentPlace;
  experiment: Experiment;
  flag: Flag;
  onStopped: (stopped: Experiment) => Promise<unknown>;
}) {
  const { place, experiment, flag } = props;
  const [choice, setChoice] = useState('');
  const name = (key: string) => variationName(flag, key);
  const decision = (): Decision =>
    choice === 'keepControl' || choice === 'inconclusive'
      ? choice
      : { ship: choice.slice('ship:'.length) };
  const stop = useFormMutation({
    mutationFn: () => stopExperiment(place, experiment.key, decision()),
    onSuccess: props.onStopped,
  });
  const treatments = experiment.variations.filter((v) => v.key !== experiment.controlVariation);
  const control = name(experiment.controlVariation);
  return (
    <FormDialog
      label="Stop experiment"
      title={`Stop ${experiment.name}?`}
      description="The split ends. Say what the users no rule catches get from now on."
      form={stop}
      confirmLabel="Stop experiment"
      onOpen={() => setChoice('')}
      result={(stopped) =>
        stopped.changeRequest ? (
          <div>
            <p role="status">
              Stopped. The change of the default serve waits for review in{' '}
              <Link
                href={changeRequestPath(place.org, place.project, stopped.changeRequest.number)}
              >
                change request #{stopped.changeRequest.number}
              </Link>
              .
            </p>
          </div>
        ) : null
      }
    >
      <fieldset>
        <legend>Decision</legend>
        {treatments.map((variation) => (
          <label key={variation.key} className="check">
            <input
              type="radio"
              name="decision"
              required
              value={`ship:${variation.key}`}
              checked={choice === `ship:${variation.key}`}
              onChange={(event) => setChoice(event.target.value)}
            />
            Ship {name(variation.key)}: serve it to the users no rule catches
          </label>
        ))}
        <label className="check">
          <input
            type="radio"
            name="decision"
            required
            value="keepControl"
            checked={choice === 'keepControl'}
            onChange={(event) => setChoice(event.target.value)}
          />
          Keep {control}, the control
        </label>
        <label className="check">
          <input
            type="radio"
            name="decision"
            required
            value="inconclusive"
            checked={choice === 'inconclusive'}
            onChange={(event) => setChoice(event.target.value)}
          />
          Inconclusive: ship nothing
        </label>
        {stop.problemAt('decision') && (
          <p role="alert" className="field-error">
            {stop.problemAt('decision')}
          </p>
        )}
      </fieldset>
    </FormDialog>
  );
}

/** The figures: exposures, the SRM warning, the metrics' rows and the chart. */
function ResultsView(props: {
  experiment: Experiment;
  flag: Flag;
  results: ExperimentResults | undefined;
  error: Error | null;
}) {
  const { experiment, flag, results } = props;
  const name = (key: string) => variationName(flag, key);
  const primary = results?.metrics.find((metric) => metric.role === 'primary');
  const treatments = useMemo(
    () =>
      experiment.variations
        .filter((v) => v.key !== experiment.controlVariation)
        .map((v) => ({ key: v.key, name: variationName(flag, v.key) })),
    [experiment.variations, experiment.controlVariation, flag],
  );
  const series = useMemo(
    () => results?.series.filter((point) => point.metric === primary?.key) ?? [],
    [results?.series, primary?.key],
  );
  if (props.error) return <p role="alert">{props.error.message}</p>;
  if (!results) return <p role="status">Loading results…</p>;
  const totalExposed = results.variations.reduce((sum, v) => sum + v.exposedUsers, 0);
  const weight = (key: string) => experiment.variations.find((v) => v.key === key)?.weight ?? 0;
  return (
    <>
      {results.srm.detected && (
        <Callout.Root color="red" role="alert">
          <Callout.Text>
            Sample ratio mismatch: the exposed users do not match the split (p ={' '}
            {results.srm.pValue.toPrecision(2)}). The results cannot be trusted: something serves or
            counts one variation more than another (a bug, a bot, a rule changed mid-way). Find the
            cause before deciding anything.
          </Callout.Text>
        </Callout.Root>
      )}
      <section aria-labelledby="exposures-heading">
        <h2 id="exposures-heading">Exposed users</h2>
        <p className="hint">Computed {formatTime(results.computedAt)}.</p>
        <table>
          <caption className="visually-hidden">Exposed users per variation</caption>
          <thead>
            <tr>
              <th scope="col">Variation</th>
              <th scope="col">Split</th>
              <th scope="col">Exposed users</th>
              <th scope="col">Share</th>
            </tr>
          </thead>
          <tbody>
            {results.variations.map((variation) => (
              <tr key={variation.key}>
                <th scope="row">
                  {name(variation.key)}
                  {variation.control && ' (control)'}
                </th>
                <td>{percentOfBasisPoints(weight(variation.key))}</td>
                <td>{variation.exposedUsers.toLocaleString()}</td>
                <td>{totalExposed === 0 ? '—' : percent(variation.exposedUsers / totalExposed)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="metrics-heading">
        <h2 id="metrics-heading">Metrics</h2>
        {results.metrics.map((metric) => (
          <MetricTable
            key={metric.key}
            metric={metric}
            experiment={experiment}
            flag={flag}
            results={results}
          />
        ))}
      </section>
      {primary && (
        <section aria-labelledby="over-time-heading">
          <h2 id="over-time-heading">{primary.name} over time</h2>
          {series.length === 0 ? (
            <p>No reading over time yet.</p>
          ) : (
            <figure aria-label={`Relative difference of ${primary.name} over time`}>
              <Suspense fallback={<p role="status">Loading chart…</p>}>
                <DifferenceChart series={series} treatments={treatments} />
              </Suspense>
              <figcaption className="hint">
                The relative difference of each variation against{' '}
                {name(experiment.controlVariation)} at each computation, with its always-valid
                interval as a band. {latestWords(series, treatments)}
              </figcaption>
            </figure>
          )}
        </section>
      )}
    </>
  );
}

/** The newest reading per treatment in words, the chart's text alternative. */
function latestWords(series: SeriesPoint[], treatments: { key: string; name: string }[]): string {
  return treatments
    .flatMap((treatment) => {
      const latest = series
        .filter((point) => point.variation === treatment.key)
        .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
        .at(-1);
      if (!latest) return [];
      const [low, high] = latest.confidenceInterval;
      return [
        `Latest for ${treatment.name}, ${formatTime(latest.at)}: ${percent(latest.relativeDifference, true)} (interval ${percent(low, true)} to ${percent(high, true)}).`,
      ];
    })
    .join(' ');
}

/** One metric: a row per variation with value, difference, interval bar and verdict. */
function MetricTable(props: {
  metric: MetricResult;
  experiment: Experiment;
  flag: Flag;
  results: ExperimentResults;
}) {
  const { metric, experiment, flag, results } = props;
  const name = (key: string) => variationName(flag, key);
  const control = name(experiment.controlVariation);
  const title = metric.name;
  const extent = Math.max(
    0.01,
    ...Object.values(metric.byVariation).flatMap((figures) =>
      figures.confidenceInterval
        ? figures.confidenceInterval.map(Math.abs).filter(Number.isFinite)
        : [],
    ),
  );
  // No verdict before every variation has its minimum users (experiments.md §3): the API's
  // `inconclusive` until then does not mean the figures settled on no difference.
  const waiting = results.variations.some(
    (variation) => variation.exposedUsers < experiment.minimumUsers,
  );
  const headingId = `metric-${metric.key}`;
  return (
    <section aria-labelledby={headingId} className="experiment-metric">
      <h3 id={headingId}>
        {title} <span className="hint">({ROLE_WORDS[metric.role]})</span>
      </h3>
      <p className="hint">
        {metric.direction === 'higher_is_better' ? 'Higher is better.' : 'Lower is better.'}
        {metric.eventsWithoutValue > 0 &&
          ` ${metric.eventsWithoutValue.toLocaleString()} events carried no number and count without a value.`}
      </p>
      <table>
        <caption className="visually-hidden">{title} by variation</caption>
        <thead>
          <tr>
            <th scope="col">Variation</th>
            <th scope="col">Users</th>
            <th scope="col">Value</th>
            <th scope="col">Difference</th>
            <th scope="col">Interval</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {results.variations.map((variation) => {
            const figures = metric.byVariation[variation.key];
            const isControl = variation.key === experiment.controlVariation;
            const interval = figures?.confidenceInterval;
            return (
              <tr key={variation.key}>
                <th scope="row">
                  {name(variation.key)}
                  {isControl && ' (control)'}
                </th>
                <td>{figures ? figures.users.toLocaleString() : '—'}</td>
                <td>{valueWords(metric.kind, figures?.value)}</td>
                <td>
                  {isControl || !figures || typeof figures.relativeDifference !== 'number'
                    ? '—'
                    : `${percent(figures.relativeDifference, true)} (${absoluteWords(metric.kind, figures.absoluteDifference)})`}
                </td>
                <td>
                  {interval ? (
                    <>
                      <IntervalBar
                        interval={interval}
                        difference={figures.relativeDifference}
                        extent={extent}
                        verdict={figures.verdict}
                        confidence={experiment.confidence}
                      />
                      <span className="hint interval-words">
                        {percent(interval[0], true)} to {percent(interval[1], true)}
                      </span>
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  {isControl
                    ? 'control'
                    : figures?.verdict && !waiting
                      ? verdictWords(figures.verdict, control)
                      : `no verdict yet: waiting for ${experiment.minimumUsers.toLocaleString()} users per variation`}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
