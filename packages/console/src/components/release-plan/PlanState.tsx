import { Button, Callout } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import type { Flag } from '../../api/types';
import { ConfirmButton } from '../ConfirmButton';
import { rateWords, verdictWords } from './figures';
import { GuardPanel } from './GuardPanel';
import { addDuration, durationWords, formatTime, viewerTimeZone } from './time';
import type { ReleasePlan } from './types';
import { queryKeys } from '../../api/query-keys';
import { useFormMutation } from '../useFormMutation';

/** The plan's state in words, as the contract names it. */
export const STATE_WORDS: Record<ReleasePlan['state'], string> = {
  active: 'Active',
  paused: 'Paused',
  completed: 'Completed',
  rolledBack: 'Rolled back',
};

/**
 * Why a plan stopped, in words: the guard's finding with both sides' rates, or the reason the
 * API recorded (a direct change, who paused or rolled it back).
 */
export function stopReason(
  plan: ReleasePlan,
  targetName: string,
  recorded: string | undefined,
): string {
  const { regression, guard } = plan;
  if (regression && guard) {
    return (
      `the guard found a regression of ${guard.metric}: ${rateWords(regression.target.rate)} of ` +
      `${regression.target.exposedUsers.toLocaleString()} users on ${targetName} against ` +
      `${rateWords(regression.rest.rate)} of ${regression.rest.exposedUsers.toLocaleString()} ` +
      `for the rest, ${formatTime(regression.detectedAt)}. ${verdictWords(regression, guard, targetName)}`
    );
  }
  return plan.pausedReason ?? recorded ?? '';
}

/**
 * The reason a plan rolled back by hand was given, from the flag's history: the plan's read shape
 * keeps only a pause's reason and the guard's finding; `release_plan.rolled_back` carries the rest.
 */
function useRollbackReason(
  org: string,
  project: string,
  flagKey: string,
  plan: ReleasePlan,
): string | undefined {
  const history = useQuery({
    queryKey: queryKeys.rollback(org, project, flagKey, plan.id),
    enabled: plan.state === 'rolledBack' && !plan.regression,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/history', {
          params: { path: { org, project, flag: flagKey }, query: { limit: 20 } },
        }),
      ),
  });
  const entry = history.data?.items.find(
    (item) => item.type === 'release_plan.rolled_back' && item.child?.id === plan.id,
  );
  const reason = entry?.changes.find((change) => change.property === 'Reason')?.to;
  return typeof reason === 'string' ? reason : undefined;
}

/**
 * When each step started or will start: a started step's `startedAt`; the next one's `nextStepAt`;
 * the later ones counted on from there by their waits. A paused plan's steps after the current
 * one have no time (they wait for Resume).
 */
export function stepTimes(plan: ReleasePlan): (Date | null)[] {
  let previous: Date | null = null;
  return plan.steps.map((step, index) => {
    let at: Date | null;
    if (step.startedAt) at = new Date(step.startedAt);
    else if (plan.state !== 'active') at = null;
    else if (index === (plan.currentStep ?? -1) + 1 && plan.nextStepAt)
      at = new Date(plan.nextStepAt);
    else at = previous && addDuration(previous, step.after);
    previous = at;
    return at;
  });
}

/**
 * A running or ended release plan (change-requests.md §4): its state and the reason it was paused
 * or rolled back, the current step, when the next starts, each step on a timeline in the viewer's
 * time zone, the guard's figures, and Pause, Resume and Roll back.
 */
export function PlanState(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  plan: ReleasePlan;
  onNewPlan: () => void;
}) {
  const { org, project, flag, environment, plan } = props;
  const queryClient = useQueryClient();
  const flagKey = flag.key ?? flag.id;
  const path = { org, project, flag: flagKey, env: environment };
  const target = flag.variations.find((v) => v.key === plan.variation || v.id === plan.variation);
  const targetName = target?.name ?? target?.key ?? plan.variation;
  const recordedReason = useRollbackReason(org, project, flagKey, plan);
  const refresh = () =>
    queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, flagKey) });

  const act = useFormMutation({
    mutationFn: (action: 'pause' | 'resume' | 'rollback') =>
      unwrap(
        action === 'pause'
          ? api.POST(
              '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/pause',
              { params: { path } },
            )
          : action === 'resume'
            ? api.POST(
                '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/resume',
                { params: { path } },
              )
            : api.POST(
                '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/rollback',
                { params: { path } },
              ),
      ),
    onSettled: refresh,
  });

  const currentStep = plan.currentStep ?? -1;
  const current = plan.steps[currentStep];
  const previous = flag.variations.find(
    (v) => v.key === plan.previousVariation || v.id === plan.previousVariation,
  );
  const allowed = (action: string) => plan._actions[action]?.allowed ?? false;
  const times = stepTimes(plan);
  const running = plan.state === 'active' || plan.state === 'paused';
  const stepNumber = `Step ${currentStep + 1} of ${plan.steps.length}`;

  return (
    <section className="plan-state" aria-label={`Release plan in ${environment}`}>
      <div className="page-heading">
        <h3>
          Release of {targetName}{' '}
          <span className={`badge plan-${plan.state}`}>{STATE_WORDS[plan.state]}</span>
        </h3>
      </div>
      {(plan.state === 'rolledBack' || plan.state === 'paused') && (
        <Callout.Root color={plan.state === 'rolledBack' ? 'red' : 'amber'} role="status">
          <Callout.Text>
            <strong>{plan.state === 'rolledBack' ? 'Rolled back' : 'Paused'}:</strong>{' '}
            {stopReason(plan, targetName, recordedReason)}
          </Callout.Text>
        </Callout.Root>
      )}
      <dl className="facts">
        <dt>Current step</dt>
        <dd>
          {current ? `${stepNumber}: ${current.percentage}% get ${targetName}` : 'Not started'}
        </dd>
        <dt>Everyone else</dt>
        <dd>{previous?.name ?? previous?.key ?? plan.previousVariation}</dd>
        <dt>Next step</dt>
        <dd>
          {plan.state === 'active' && plan.nextStepAt ? (
            <time dateTime={plan.nextStepAt}>{formatTime(plan.nextStepAt)}</time>
          ) : plan.state === 'paused' ? (
            'waits for Resume'
          ) : (
            'none'
          )}
        </dd>
      </dl>
      <p className="hint">Times in {viewerTimeZone()}.</p>
      <ol className="timeline" aria-label="Timeline">
        {plan.steps.map((step, index) => {
          const at = times[index];
          const status =
            index < currentStep
              ? 'done'
              : index === currentStep
                ? plan.state === 'rolledBack'
                  ? 'rolled back'
                  : 'current'
                : running
                  ? 'to come'
                  : 'not reached';
          return (
            <li key={index} aria-current={index === currentStep ? 'step' : undefined}>
              <strong>{step.percentage}%</strong>{' '}
              <span className="hint">
                {index === 0 ? 'at the start' : `${durationWords(step.after)} after step ${index}`}
              </span>{' '}
              {at && <time dateTime={at.toISOString()}>{formatTime(at)}</time>}{' '}
              <span className="badge">{status}</span>
            </li>
          );
        })}
      </ol>
      {act.error && (
        <p role="alert" className="field-error">
          {act.error.message}
        </p>
      )}
      <div className="actions plan-actions">
        {plan.state === 'active' && allowed('pause') && (
          <Button
            type="button"
            variant="soft"
            disabled={act.isPending}
            onClick={() => act.mutate('pause')}
          >
            Pause
          </Button>
        )}
        {plan.state === 'paused' && allowed('resume') && (
          <Button type="button" disabled={act.isPending} onClick={() => act.mutate('resume')}>
            Resume
          </Button>
        )}
        {running && allowed('rollback') && (
          <ConfirmButton
            label="Roll back"
            title={`Roll back the release of ${targetName}?`}
            description={`The default serve in ${environment} goes back to what it was before the plan, and the plan ends.`}
            confirm="Roll back"
            busy={act.isPending}
            onConfirm={() => act.mutate('rollback')}
          />
        )}
        {!running && (
          <Button type="button" variant="soft" onClick={props.onNewPlan}>
            New release plan
          </Button>
        )}
      </div>
      {plan.guard && (
        <GuardPanel
          org={org}
          project={project}
          flag={flag}
          environment={environment}
          plan={plan}
          guard={plan.guard}
          targetName={targetName}
        />
      )}
    </section>
  );
}
