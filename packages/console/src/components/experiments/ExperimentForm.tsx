import { Button, TextArea } from '@radix-ui/themes';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { createExperiment, experimentPagePath, type ExperimentPlace } from '../../api/experiments';
import { queryKeys } from '../../api/query-keys';
import type { Flag, FlagEnvironment, Metric } from '../../api/types';
import { Field, Labelled } from '../Field';
import { keyFromName } from '../key-from-name';
import { useFormMutation } from '../useFormMutation';
import { percentOfBasisPoints, variationName } from './words';

/** The contract's defaults (experiments.md §2). */
const DEFAULTS = { confidence: '0.95', minimumUsers: '500' };
/** The whole split, in basis points. */
const WHOLE = 10_000;

/** Percentages as typed to basis points: "50" → 5000, "33.33" → 3333. */
function basisPoints(percentage: string): number {
  const value = Number(percentage);
  return Number.isFinite(value) ? Math.round(value * 100) : 0;
}

/** An even split of the whole over `count` variations, as percentages ("50", "33.34", "33.33"). */
function evenSplit(count: number): string[] {
  const each = Math.floor(WHOLE / count);
  return Array.from({ length: count }, (_, index) =>
    String((each + (index === 0 ? WHOLE - each * count : 0)) / 100),
  );
}

/**
 * A new experiment of a flag in one environment (`POST …/experiments`, experiments.md §2): key,
 * name and hypothesis; the flag's variations with their weights (percentages typed, basis points
 * sent, adding up to 100%) and the control; the primary metric and the secondary and guardrail
 * ones from the project's catalogue; confidence and minimum users; and a sentence saying what
 * the split will serve. The API's messages sit at the fields they name; the new draft's page opens.
 */
export function ExperimentForm(props: {
  place: ExperimentPlace;
  flag: Flag;
  configuration: FlagEnvironment | undefined;
  metrics: Metric[];
  onCancel: () => void;
}) {
  const { place, flag, configuration, metrics } = props;
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const keys = flag.variations.map((v) => v.key ?? v.id);
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const [keyTouched, setKeyTouched] = useState(false);
  const [hypothesis, setHypothesis] = useState('');
  const [weights, setWeights] = useState<Record<string, string>>(() => {
    const split = evenSplit(keys.length);
    return Object.fromEntries(keys.map((k, index) => [k, split[index] ?? '0']));
  });
  // The control is what people get today: the default serve, else a Boolean's Off.
  const [control, setControl] = useState(() => {
    const serving =
      configuration?.strategy === 'SingleVariation'
        ? flag.variations.find((v) => v.id === configuration.defaultVariationId)
        : flag.type === 'Boolean'
          ? flag.variations.find((v) => v.value === 'false')
          : undefined;
    return serving?.key ?? serving?.id ?? keys[0] ?? '';
  });
  const [primary, setPrimary] = useState(metrics[0]?.key ?? '');
  const [secondary, setSecondary] = useState<string[]>([]);
  const [guardrails, setGuardrails] = useState<string[]>([]);
  const [confidence, setConfidence] = useState(DEFAULTS.confidence);
  const [minimumUsers, setMinimumUsers] = useState(DEFAULTS.minimumUsers);

  const split = keys
    .map((k) => ({ key: k, weight: basisPoints(weights[k] ?? '0') }))
    .filter((variation) => variation.weight > 0);
  const total = split.reduce((sum, variation) => sum + variation.weight, 0);
  // The first metric of the catalogue is chosen once the catalogue has arrived.
  const primaryMetric = primary || metrics[0]?.key || '';

  const create = useFormMutation({
    mutationFn: () =>
      createExperiment(place, {
        key,
        name,
        ...(hypothesis ? { hypothesis } : {}),
        variations: split,
        controlVariation: control,
        primaryMetric,
        secondaryMetrics: secondary.filter((k) => k !== primaryMetric),
        guardrailMetrics: guardrails.filter((k) => k !== primaryMetric),
        confidence: Number(confidence),
        minimumUsers: Number(minimumUsers),
      }),
    onSuccess: async (created) => {
      await Promise.all([
        queryClient.invalidateQueries({
          queryKey: queryKeys.flag(place.org, place.project, place.flag),
        }),
        queryClient.invalidateQueries({
          queryKey: queryKeys.experiments(place.org, place.project),
        }),
      ]);
      navigate(experimentPagePath(place, created.key));
    },
  });

  const metricsPath = `/orgs/${place.org}/projects/${place.project}/metrics`;
  const toggle = (list: string[], metric: string, on: boolean) =>
    on ? [...list, metric] : list.filter((k) => k !== metric);

  return (
    <form
      className="experiment-form"
      aria-label={`New experiment in ${place.environment}`}
      onSubmit={create.submit}
    >
      <h3>New experiment in {place.environment}</h3>
      <Field
        label="Name"
        value={name}
        required
        onChange={(event) => {
          setName(event.target.value);
          if (!keyTouched) setKey(keyFromName(event.target.value));
        }}
        error={create.problemAt('name')}
      />
      <Field
        label="Key"
        value={key}
        required
        autoComplete="off"
        onChange={(event) => {
          setKey(event.target.value);
          setKeyTouched(true);
        }}
        error={create.problemAt('key')}
      />
      <Labelled
        label="Hypothesis"
        hint="What you expect and why, e.g. a shorter checkout raises completed checkouts."
        error={create.problemAt('hypothesis')}
      >
        {(id, describedBy) => (
          <TextArea
            id={id}
            aria-describedby={describedBy}
            value={hypothesis}
            onChange={(event) => setHypothesis(event.target.value)}
          />
        )}
      </Labelled>

      <fieldset>
        <legend>Split</legend>
        <p className="hint">
          The share of the users no rule catches that get each variation; a variation at 0% takes no
          part.
        </p>
        {flag.variations.map((variation) => {
          const k = variation.key ?? variation.id;
          return (
            <Field
              key={variation.id}
              label={`Weight of ${variationName(flag, k)} (%)`}
              type="number"
              min={0}
              max={100}
              step={0.01}
              value={weights[k] ?? '0'}
              onChange={(event) => setWeights({ ...weights, [k]: event.target.value })}
            />
          );
        })}
        <p
          className={total === WHOLE ? 'hint' : 'field-error'}
          aria-live="polite"
          id={`split-total-${place.environment}`}
        >
          Total: {percentOfBasisPoints(total)}
          {total !== WHOLE && ' — the weights must add up to 100%.'}
        </p>
        {create.problemAt('variations') && (
          <p role="alert" className="field-error">
            {create.problemAt('variations')}
          </p>
        )}
        <p role="note">
          Users no rule catches get{' '}
          {split.length === 0
            ? 'nothing yet: give at least two variations a weight'
            : split
                .map((v) => `${variationName(flag, v.key)} ${percentOfBasisPoints(v.weight)}`)
                .join(', ')}
          .
        </p>
        <Labelled label="Control variation" error={create.problemAt('controlVariation')}>
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={control}
              onChange={(event) => setControl(event.target.value)}
            >
              {flag.variations.map((variation) => (
                <option key={variation.id} value={variation.key ?? variation.id}>
                  {variationName(flag, variation.key ?? variation.id)}
                </option>
              ))}
            </select>
          )}
        </Labelled>
      </fieldset>

      <fieldset>
        <legend>Metrics</legend>
        {metrics.length === 0 ? (
          <p role="note">
            The project has no metric yet: create one on the <Link href={metricsPath}>Metrics</Link>{' '}
            page first.
          </p>
        ) : (
          <>
            <Labelled
              label="Primary metric"
              hint="The metric that decides the experiment."
              error={create.problemAt('primaryMetric')}
            >
              {(id, describedBy) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  value={primaryMetric}
                  onChange={(event) => setPrimary(event.target.value)}
                >
                  {metrics.map((metric) => (
                    <option key={metric.id} value={metric.key}>
                      {metric.name}
                    </option>
                  ))}
                </select>
              )}
            </Labelled>
            <MetricChoice
              legend="Secondary metrics"
              hint="Also measured, better or worse."
              metrics={metrics.filter((metric) => metric.key !== primaryMetric)}
              chosen={secondary}
              onChange={(metric, on) => setSecondary(toggle(secondary, metric, on))}
              error={create.problemAt('secondaryMetrics')}
            />
            <MetricChoice
              legend="Guardrail metrics"
              hint="Watched for harm only: they can only say worse."
              metrics={metrics.filter((metric) => metric.key !== primaryMetric)}
              chosen={guardrails}
              onChange={(metric, on) => setGuardrails(toggle(guardrails, metric, on))}
              error={create.problemAt('guardrailMetrics')}
            />
          </>
        )}
      </fieldset>

      <Field
        label="Confidence"
        type="number"
        min={0.8}
        max={0.999}
        step={0.001}
        value={confidence}
        onChange={(event) => setConfidence(event.target.value)}
        error={create.problemAt('confidence')}
        hint="0.8 to 0.999: however often the results are read, a wrong verdict comes at most 1 − confidence of the time."
      />
      <Field
        label="Minimum users per variation"
        type="number"
        min={100}
        value={minimumUsers}
        onChange={(event) => setMinimumUsers(event.target.value)}
        error={create.problemAt('minimumUsers')}
        hint="At least 100: no verdict before every variation has this many exposed users."
      />
      {create.message && (
        <p role="alert" className="field-error">
          {create.message}
        </p>
      )}
      <div className="actions">
        <Button type="button" variant="soft" color="gray" onClick={props.onCancel}>
          Cancel
        </Button>
        <Button type="submit" disabled={create.isPending}>
          Create experiment
        </Button>
      </div>
    </form>
  );
}

/** A multi-select of the catalogue as a group of check boxes. */
function MetricChoice(props: {
  legend: string;
  hint: string;
  metrics: Metric[];
  chosen: string[];
  onChange: (metric: string, on: boolean) => void;
  error: string | undefined;
}) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <p className="hint">{props.hint}</p>
      {props.metrics.length === 0 && <p className="hint">No other metric in the catalogue.</p>}
      {props.metrics.map((metric) => (
        <label key={metric.id} className="check">
          <input
            type="checkbox"
            checked={props.chosen.includes(metric.key)}
            onChange={(event) => props.onChange(metric.key, event.target.checked)}
          />
          {metric.name}
        </label>
      ))}
      {props.error && (
        <p role="alert" className="field-error">
          {props.error}
        </p>
      )}
    </fieldset>
  );
}
