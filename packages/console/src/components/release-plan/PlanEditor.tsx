import { Button } from '@radix-ui/themes';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../../api/client';
import type { Flag, FlagEnvironment } from '../../api/types';
import { changeRequestPath } from '../change-requests/paths';
import { Field, Labelled } from '../Field';
import { useFormMutation } from '../useFormMutation';
import {
  addDuration,
  formatTime,
  viewerTimeZone,
  waitToIso,
  WAIT_UNITS,
  type WaitUnit,
} from './time';
import type { ReleaseGuard, ReleasePlan } from './types';
import { queryKeys } from '../../api/query-keys';

/** A step as typed: the text of its fields, kept as typed until the API answers. */
interface DraftStep {
  id: number;
  percentage: string;
  amount: string;
  unit: WaitUnit;
}

/** The contract's example plan (change-requests.md §4): 1%, 10% an hour later, 50%, 100%. */
const FIRST_STEPS: Omit<DraftStep, 'id'>[] = [
  { percentage: '1', amount: '0', unit: 'seconds' },
  { percentage: '10', amount: '1', unit: 'hours' },
  { percentage: '50', amount: '1', unit: 'days' },
  { percentage: '100', amount: '2', unit: 'days' },
];

/** The guard's defaults (change-requests.md §5). */
const GUARD_DEFAULTS = { minimumUsers: '500', confidence: '0.95' };
/** Where a change request's validation names the plan's fields: its first (only) change. */
const PROPOSED_PLAN = 'changes[0].plan.';

/**
 * A new release plan for one flag in one environment (`PUT …/release-plan`): the target variation,
 * the steps (a percentage and the wait before each), a timeline of when each step would start if
 * the plan started now (in the viewer's time zone, named), and the optional guard. Whatever the
 * API refuses is shown at the step or field it names; nothing typed is lost. In an environment
 * that requires change requests the plan is proposed in one (`kind: releasePlan`) and the
 * reviewer's page opens.
 */
export function PlanEditor(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  configuration: FlagEnvironment | undefined;
  /** Whether the environment requires change requests: the plan is then proposed in one. */
  reviewed: boolean;
  /** Called with the started plan (its `warnings` say what is worth knowing, e.g. a new metric). */
  onStarted?: (plan: ReleasePlan) => void;
}) {
  const { org, project, flag, environment, configuration } = props;
  const queryClient = useQueryClient();
  const flagKey = flag.key ?? flag.id;
  const variationName = (id: string | undefined) => {
    const variation = flag.variations.find((v) => v.id === id || v.key === id);
    return variation?.name ?? variation?.key ?? '';
  };
  const serving =
    configuration?.strategy === 'SingleVariation'
      ? flag.variations.find((v) => v.id === configuration.defaultVariationId)
      : undefined;
  // A Boolean flag is released by raising On; another flag towards a variation not served now.
  const [variation, setVariation] = useState(
    () =>
      (flag.type === 'Boolean'
        ? flag.variations.find((v) => v.value === 'true')?.key
        : flag.variations.find((v) => v.id !== serving?.id)?.key) ??
      flag.variations[0]?.key ??
      '',
  );
  const target = flag.variations.find((v) => (v.key ?? v.id) === variation);
  const servedAlready = serving !== undefined && target?.id === serving.id;
  const [steps, setSteps] = useState<DraftStep[]>(() =>
    FIRST_STEPS.map((step, id) => ({ ...step, id })),
  );
  const [nextId, setNextId] = useState(FIRST_STEPS.length);
  const [guarded, setGuarded] = useState(false);
  const [metric, setMetric] = useState('');
  const [direction, setDirection] = useState<ReleaseGuard['direction']>('lower_is_better');
  const [minimumUsers, setMinimumUsers] = useState(GUARD_DEFAULTS.minimumUsers);
  const [confidence, setConfidence] = useState(GUARD_DEFAULTS.confidence);
  const [action, setAction] = useState<ReleaseGuard['action']>('rollback');

  const [, navigate] = useLocation();
  const plan = {
    variation,
    steps: steps.map((step) => ({
      percentage: Number(step.percentage),
      after: waitToIso(step.amount, step.unit),
    })),
    ...(guarded
      ? {
          guard: {
            metric,
            kind: 'rate' as const,
            direction,
            minimumUsers: Number(minimumUsers),
            confidence: Number(confidence),
            action,
          },
        }
      : {}),
  };
  const start = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.PUT(
          '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan',
          { params: { path: { org, project, flag: flagKey, env: environment } }, body: plan },
        ),
      ),
    onSuccess: async (started) => {
      await queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, flagKey) });
      props.onStarted?.(started);
    },
  });
  // Where change requests are required the plan is started by one (spec: change requests, §4).
  const propose = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/change-requests', {
          params: { path: { org, project } },
          body: {
            environment,
            title: `Release plan of ${flagKey} in ${environment}`,
            changes: [{ kind: 'releasePlan', flagKey, plan }],
            submit: true,
          },
        }),
      ),
    onSuccess: async (created) => {
      await queryClient.invalidateQueries({ queryKey: queryKeys.changeRequests(org, project) });
      navigate(changeRequestPath(org, project, created.number));
    },
  });
  const save = props.reviewed ? propose : start;
  // A change request names the plan's fields under its first change.
  const problemAt = (field: string) =>
    save.problemAt(props.reviewed ? `${PROPOSED_PLAN}${field}` : field);

  const update = (id: number, change: Partial<DraftStep>) =>
    setSteps(steps.map((step) => (step.id === id ? { ...step, ...change } : step)));
  const now = new Date();
  let startsAt: Date | null = now;
  const timeline = steps.map((step) => {
    startsAt = startsAt && addDuration(startsAt, waitToIso(step.amount, step.unit));
    return startsAt;
  });

  return (
    <form
      className="plan-editor"
      aria-label={`New release plan in ${environment}`}
      onSubmit={save.submit}
    >
      <Labelled label="Target variation" error={problemAt('variation')}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={variation}
            onChange={(event) => setVariation(event.target.value)}
          >
            {flag.variations.map((v) => (
              <option key={v.id} value={v.key ?? v.id}>
                {v.name ?? v.key}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      <ReleaseExplanation
        org={org}
        project={project}
        flagKey={flagKey}
        environment={environment}
        target={variationName(variation)}
        serving={serving ? variationName(serving.id) : null}
        servedAlready={servedAlready}
        rollout={configuration !== undefined && configuration.strategy !== 'SingleVariation'}
      />

      <fieldset>
        <legend>Steps</legend>
        <ol className="plan-steps">
          {steps.map((step, index) => (
            <li key={step.id}>
              <div role="group" aria-label={`Step ${index + 1}`} className="plan-step">
                <Field
                  label="Percentage"
                  type="number"
                  min={0}
                  max={100}
                  step={0.001}
                  value={step.percentage}
                  onChange={(event) => update(step.id, { percentage: event.target.value })}
                  error={problemAt(`steps.${index}.percentage`)}
                />
                <Field
                  label={index === 0 ? 'Wait after starting' : 'Wait after the step before'}
                  type="number"
                  min={0}
                  value={step.amount}
                  onChange={(event) => update(step.id, { amount: event.target.value })}
                  error={problemAt(`steps.${index}.after`)}
                />
                <Labelled label="Unit">
                  {(id) => (
                    <select
                      id={id}
                      value={step.unit}
                      onChange={(event) =>
                        update(step.id, { unit: event.target.value as WaitUnit })
                      }
                    >
                      {Object.keys(WAIT_UNITS).map((unit) => (
                        <option key={unit} value={unit}>
                          {unit}
                        </option>
                      ))}
                    </select>
                  )}
                </Labelled>
                <Button
                  type="button"
                  variant="soft"
                  color="gray"
                  aria-label={`Remove step ${index + 1}`}
                  disabled={steps.length === 1}
                  onClick={() => setSteps(steps.filter((s) => s.id !== step.id))}
                >
                  Remove
                </Button>
              </div>
              {problemAt(`steps.${index}`) &&
                !problemAt(`steps.${index}.percentage`) &&
                !problemAt(`steps.${index}.after`) && (
                  <p className="field-error">{problemAt(`steps.${index}`)}</p>
                )}
            </li>
          ))}
        </ol>
        {problemAt('steps') && !steps.some((_, i) => problemAt(`steps.${i}`)) && (
          <p role="alert" className="field-error">
            {problemAt('steps')}
          </p>
        )}
        <Button
          type="button"
          variant="soft"
          onClick={() => {
            setSteps([...steps, { id: nextId, percentage: '100', amount: '1', unit: 'days' }]);
            setNextId(nextId + 1);
          }}
        >
          Add step
        </Button>
      </fieldset>

      <section aria-labelledby={`preview-${environment}`}>
        <h4 id={`preview-${environment}`}>If started now</h4>
        <p className="hint">Times in {viewerTimeZone(now)}.</p>
        <ol className="timeline" aria-label="Timeline if started now">
          {steps.map((step, index) => {
            const at = timeline[index];
            return (
              <li key={step.id}>
                <strong>{Number(step.percentage) || 0}%</strong>{' '}
                {at ? (
                  <time dateTime={at.toISOString()}>{formatTime(at)}</time>
                ) : (
                  <span className="field-error">the wait is not a duration</span>
                )}
              </li>
            );
          })}
        </ol>
      </section>

      <label className="check">
        <input
          type="checkbox"
          checked={guarded}
          onChange={(event) => setGuarded(event.target.checked)}
        />
        Guard the release with a metric
      </label>
      {guarded && (
        <fieldset className="guard-fields">
          <legend>Guard</legend>
          <Field
            label="Metric (a tracked event key)"
            value={metric}
            onChange={(event) => setMetric(event.target.value)}
            error={problemAt('guard.metric')}
            hint="A user counts once they send this event after first getting the flag."
          />
          <Labelled
            label="The metric is better when its rate is"
            error={problemAt('guard.direction')}
          >
            {(id, describedBy) => (
              <select
                id={id}
                aria-describedby={describedBy}
                value={direction}
                onChange={(event) => setDirection(event.target.value as ReleaseGuard['direction'])}
              >
                <option value="lower_is_better">lower (errors, failures)</option>
                <option value="higher_is_better">higher (conversions)</option>
              </select>
            )}
          </Labelled>
          <Field
            label="Minimum users per side"
            type="number"
            min={100}
            value={minimumUsers}
            onChange={(event) => setMinimumUsers(event.target.value)}
            error={problemAt('guard.minimumUsers')}
            hint="At least 100; the test starts once both sides have this many."
          />
          <Field
            label="Confidence"
            type="number"
            min={0.8}
            max={0.999}
            step={0.001}
            value={confidence}
            onChange={(event) => setConfidence(event.target.value)}
            error={problemAt('guard.confidence')}
            hint="0.8 to 0.999: the chance of not stopping a release that is as good."
          />
          <Labelled label="On a regression" error={problemAt('guard.action')}>
            {(id, describedBy) => (
              <select
                id={id}
                aria-describedby={describedBy}
                value={action}
                onChange={(event) => setAction(event.target.value as ReleaseGuard['action'])}
              >
                <option value="rollback">roll back</option>
                <option value="pause">pause</option>
              </select>
            )}
          </Labelled>
        </fieldset>
      )}
      {save.message && (
        <p role="alert" className="field-error">
          {save.message}
        </p>
      )}
      <Button type="submit" disabled={save.isPending || servedAlready}>
        {props.reviewed ? 'Request review of release plan' : 'Start release plan'}
      </Button>
    </form>
  );
}

/**
 * What the plan does, in the words of the targeting ("When no rule matches, serve", the default
 * serve), following the chosen target; or, when the target is what no-match already serves, what
 * to do first (issue 43: a new Boolean flag serves On when no rule matches).
 */
function ReleaseExplanation(props: {
  org: string;
  project: string;
  flagKey: string;
  environment: string;
  target: string;
  serving: string | null;
  servedAlready: boolean;
  rollout: boolean;
}) {
  const { target, serving } = props;
  const targeting = (
    // The flag page's own address (pages/FlagPage's flagPath, which imports this module).
    <Link
      href={`/orgs/${props.org}/projects/${props.project}/flags/${props.flagKey}/targeting?env=${encodeURIComponent(props.environment)}`}
    >
      Targeting
    </Link>
  );
  if (props.rollout)
    return (
      <p className="hint" role="note">
        First set &ldquo;When no rule matches, serve&rdquo; to one variation on {targeting}: a
        release plan moves people from one variation to {target}, not from a percentage rollout.
      </p>
    );
  if (props.servedAlready)
    return (
      <p className="hint" role="note">
        When no rule matches, this flag serves {target} already, so there is nothing to release.
        First set &ldquo;When no rule matches, serve&rdquo; to the variation people get today on{' '}
        {targeting} (for a new Boolean flag, Off), then plan the release of {target} here.
      </p>
    );
  return (
    <p className="hint" role="note">
      Step by step, a growing share of the people no rule matches get {target}; the others keep
      getting {serving ?? 'the default serve'}, what &ldquo;When no rule matches&rdquo; serves now.
      A person who gets {target} at one step keeps it at the next.
    </p>
  );
}
