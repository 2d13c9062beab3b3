import { useMutation, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Switch } from '@radix-ui/themes';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Environment } from '../api/types';
import { isCritical } from './Shell';
import { DialogActions } from './DialogActions';

/**
 * On/off for one flag in one environment (`POST …/toggle`); a critical environment asks first.
 * Disabled, with the API's reason, when `allowed` refuses (`_actions.toggle`). `compact` (the
 * flag list's cells) names the switch by flag and environment without showing the label.
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
        disabled={!allowed?.allowed || toggle.isPending}
        onCheckedChange={request}
        aria-label={compact ? `${flag} in ${name}` : undefined}
        aria-describedby={`${id}-note`}
      />
      {!compact && <label htmlFor={id}>On in {name}</label>}
      <span
        id={`${id}-note`}
        className={toggle.error ? 'field-error' : compact ? 'visually-hidden' : 'hint'}
      >
        {toggle.error?.message ?? (allowed?.allowed ? '' : (allowed?.reason ?? ''))}
      </span>
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
