import { useMutation, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Button, Switch } from '@radix-ui/themes';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Environment } from '../api/types';
import { isCritical } from './Shell';
import { DialogActions } from './DialogActions';

/**
 * On/off for one flag in one environment (`POST …/toggle`); a critical environment asks first.
 * Disabled, with the API's reason, when `allowed` refuses (`_actions.toggle`). `compact` (the
 * flag list's cells) names the switch by flag and environment without showing the label.
 *
 * In an environment that requires change requests the switch is read-only (on/off is proposed
 * in the targeting's pending changes) and, while the flag is on and the policy allows it, one
 * red "Emergency off" button turns it off at once, audited as a bypass (design record 043).
 */
export function EnvironmentToggle(props: {
  org: string;
  project: string;
  flag: string;
  environment: Environment;
  enabled: boolean;
  allowed: { allowed: boolean; reason?: string | null | undefined } | undefined;
  compact?: boolean;
}) {
  const { org, project, flag, environment, allowed, compact } = props;
  const id = useId();
  const [asking, setAsking] = useState<boolean | null>(null);
  const queryClient = useQueryClient();
  const name = environment.name ?? environment.key ?? '';

  const toggle = useMutation({
    mutationFn: (enabled: boolean) =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle', {
          params: { path: { org, project, flag, env: environment.key ?? environment.id } },
          body: { enabled },
        }),
      ),
    onSettled: () =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: ['flag', org, project, flag] }),
        queryClient.invalidateQueries({ queryKey: ['flags', org, project] }),
      ]),
  });

  const policy = environment.changeRequests;
  const reviewed = policy.required;
  const note = reviewed
    ? `Changes in ${name} go through review.`
    : allowed?.allowed
      ? ''
      : (allowed?.reason ?? '');

  function request(enabled: boolean) {
    if (isCritical(environment)) setAsking(enabled);
    else toggle.mutate(enabled);
  }

  return (
    <div className="toggle">
      <Switch
        id={id}
        color="green"
        checked={props.enabled}
        disabled={reviewed || !allowed?.allowed || toggle.isPending}
        onCheckedChange={request}
        aria-label={compact ? `${flag} in ${name}` : undefined}
        aria-describedby={`${id}-note`}
      />
      {!compact && <label htmlFor={id}>On in {name}</label>}
      <span
        id={`${id}-note`}
        className={toggle.error ? 'field-error' : compact ? 'visually-hidden' : 'hint'}
      >
        {toggle.error?.message ?? note}
      </span>
      {reviewed && policy.emergencyOff && props.enabled && !compact && (
        <AlertDialog.Root>
          <AlertDialog.Trigger>
            <Button type="button" color="red" variant="soft">
              Emergency off in {name}
            </Button>
          </AlertDialog.Trigger>
          <AlertDialog.Content className="dialog-body">
            <AlertDialog.Title>
              Turn {flag} off in {name} now, without review?
            </AlertDialog.Title>
            <AlertDialog.Description>
              Emergency off skips the change request: SDKs in {name} are served the off variation
              within seconds, and the audit log records that review was bypassed.
            </AlertDialog.Description>
            <DialogActions
              alert
              danger
              confirmLabel={`Turn off in ${name} now`}
              onConfirm={() => toggle.mutate(false)}
            />
          </AlertDialog.Content>
        </AlertDialog.Root>
      )}
      <AlertDialog.Root open={asking !== null} onOpenChange={(open) => !open && setAsking(null)}>
        <AlertDialog.Content className="dialog-body">
          <AlertDialog.Title>
            Turn {flag} {asking ? 'on' : 'off'} in {name}?
          </AlertDialog.Title>
          <AlertDialog.Description>
            {name} is a critical environment: SDKs there receive the change within seconds.
          </AlertDialog.Description>
          <DialogActions
            alert
            confirmLabel={`Turn ${asking ? 'on' : 'off'} in ${name}`}
            onConfirm={() => toggle.mutate(asking ?? false)}
          />
        </AlertDialog.Content>
      </AlertDialog.Root>
    </div>
  );
}
