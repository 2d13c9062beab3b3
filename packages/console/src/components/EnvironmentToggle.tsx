import { useMutation, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Switch } from '@radix-ui/themes';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Environment, FlagEnvironment } from '../api/types';
import { isCritical } from './Shell';
import { DialogActions } from './DialogActions';

/**
 * On/off for one flag in one environment (`POST …/toggle`); a critical environment asks first.
 * Disabled, with the API's reason, when `_actions.toggle` refuses.
 */
export function EnvironmentToggle(props: {
  org: string;
  project: string;
  flag: string;
  environment: Environment;
  configuration: FlagEnvironment;
}) {
  const { org, project, flag, environment, configuration } = props;
  const id = useId();
  const [asking, setAsking] = useState<boolean | null>(null);
  const queryClient = useQueryClient();
  const name = environment.name ?? environment.key ?? '';
  const allowed = configuration._actions['toggle'];

  const toggle = useMutation({
    mutationFn: (enabled: boolean) =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle', {
          params: { path: { org, project, flag, env: environment.key ?? environment.id } },
          body: { enabled },
        }),
      ),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['flag', org, project, flag] }),
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
        checked={configuration.isEnabled}
        disabled={!allowed?.allowed || toggle.isPending}
        onCheckedChange={request}
        aria-describedby={`${id}-note`}
      />
      <label htmlFor={id}>On in {name}</label>
      <span id={`${id}-note`} className={toggle.error ? 'field-error' : 'hint'}>
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
