import { useQuery, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Badge, Button } from '@radix-ui/themes';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Environment, Flag, FlagEnvironment } from '../api/types';
import { Labelled } from './Field';
import { percentageOf } from './targeting/PercentageControl';
import { describeRule } from './targeting/sentence';
import { DialogActions } from './DialogActions';
import { useSegments } from '../api/segments';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from './useFormMutation';

/**
 * A flag's configuration in two environments side by side (journey 5), each line marked when the
 * two differ, and copying the left one's configuration to the right one in one confirmed step
 * (`POST …/environments/{env}/copy`). Reads the same queries as the targeting tabs.
 */
export function Compare(props: {
  org: string;
  project: string;
  flag: Flag;
  environments: Environment[];
  configurations: FlagEnvironment[];
}) {
  const { environments } = props;
  const [left, setLeft] = useState(environments[0]?.key ?? '');
  const [right, setRight] = useState(environments[1]?.key ?? environments[0]?.key ?? '');
  const a = useSummary(props, left);
  const b = useSummary(props, right);
  const lines = a && b ? Object.keys(a) : [];
  const queryClient = useQueryClient();
  const flagKey = props.flag.key ?? props.flag.id;
  const copy = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/copy', {
          params: { path: { org: props.org, project: props.project, flag: flagKey, env: left } },
          body: { target: right },
        }),
      ),
    onSuccess: () =>
      queryClient.invalidateQueries({
        queryKey: queryKeys.flag(props.org, props.project, flagKey),
      }),
  });
  const canCopy =
    left !== right &&
    (props.configurations.find((c) => c.environmentKey === right)?._actions['update']?.allowed ??
      false);

  const picker = (label: string, value: string, set: (key: string) => void) => (
    <Labelled label={label}>
      {(id) => (
        <select id={id} value={value} onChange={(event) => set(event.target.value)}>
          {environments.map((environment) => (
            <option key={environment.id} value={environment.key ?? ''}>
              {environment.name ?? environment.key}
            </option>
          ))}
        </select>
      )}
    </Labelled>
  );

  return (
    <section aria-labelledby="compare-heading">
      <h2 id="compare-heading">Compare environments</h2>
      <div className="row">
        {picker('Compare', left, setLeft)}
        {picker('with', right, setRight)}
      </div>
      <table className="compare">
        <thead>
          <tr>
            <th scope="col">Setting</th>
            <th scope="col">{left}</th>
            <th scope="col">{right}</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line) => {
            const differs = a?.[line] !== b?.[line];
            return (
              <tr key={line} className={differs ? 'differs' : undefined}>
                <th scope="row">
                  {line} {differs && <Badge variant="soft">differs</Badge>}
                </th>
                <td>{a?.[line]}</td>
                <td>{b?.[line]}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {canCopy && (
        <AlertDialog.Root onOpenChange={() => copy.reset()}>
          <AlertDialog.Trigger>
            <Button type="button" variant="soft" color="gray">
              Copy {left} to {right}
            </Button>
          </AlertDialog.Trigger>
          <AlertDialog.Content className="dialog-body">
            <AlertDialog.Title>
              Copy {left}&apos;s configuration to {right}?
            </AlertDialog.Title>
            <AlertDialog.Description>
              {right} gets {left}&apos;s on/off state, default serve, prerequisites and rules; its
              own rules are replaced. SDKs in {right} receive the change within seconds.
            </AlertDialog.Description>
            <DialogActions
              alert
              confirmLabel={`Copy to ${right}`}
              onConfirm={() => copy.mutate()}
            />
          </AlertDialog.Content>
        </AlertDialog.Root>
      )}
      {copy.error && (
        <p role="alert" className="field-error">
          {copy.error.message}
        </p>
      )}
    </section>
  );
}

/** One environment's configuration as comparable lines of text. */
function useSummary(
  props: { org: string; project: string; flag: Flag; configurations: FlagEnvironment[] },
  env: string,
): Record<string, string> | null {
  const { org, project, flag } = props;
  const flagKey = flag.key ?? flag.id;
  const rules = useQuery({
    queryKey: queryKeys.flagRules(org, project, flagKey, env),
    enabled: env !== '',
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules', {
          params: { path: { org, project, flag: flagKey, env } },
        }),
      ),
  });
  const segments = useSegments(org, project);
  const configuration = props.configurations.find((c) => c.environmentKey === env);
  if (!configuration || !rules.data) return null;
  const name = (id: string) => {
    const variation = flag.variations.find((v) => v.id === id);
    return variation?.name ?? variation?.key ?? id;
  };
  return {
    'On/off': configuration.isEnabled ? 'On' : 'Off',
    'Default serve':
      configuration.strategy === 'PercentageRollout'
        ? configuration.rollout.map((w) => `${name(w.variationId)} ${w.weight / 1000}%`).join(', ')
        : name(configuration.defaultVariationId),
    'While off': name(configuration.offVariationId),
    Prerequisites:
      configuration.prerequisites
        .map((p) => `${p.prerequisiteFlagKey} is ${p.expectedVariationKey}`)
        .join(', ') || 'none',
    Rules:
      rules.data.items
        .map(
          (rule, i) =>
            `${i + 1}. ${describeRule(rule, segments.data?.items ?? []) || 'any context'} → ${name(rule.variationId)}${rule.rolloutWeight !== null ? ` (${percentageOf(rule.rolloutWeight)}%)` : ''}`,
        )
        .join('\n') || 'none',
  };
}
