import { useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Button, Switch } from '@radix-ui/themes';
import { useCallback, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Environment } from '../api/types';
import { isCritical } from './Shell';
import { DialogActions } from './DialogActions';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from './useFormMutation';

/** One switch's request: a flag on or off in an environment. */
export interface Toggle {
  flag: string;
  environment: Environment;
  enabled: boolean;
}

/** Whether the caller may toggle (`_actions.toggle`), and the API's reason when not. */
export type ToggleAllowed = { allowed: boolean; reason?: string | null | undefined } | undefined;

/**
 * `POST …/toggle` for any flag and environment of the project; the flag and the flag list are
 * refetched afterwards, whether it succeeded or not.
 */
export function useToggleMutation(org: string, project: string) {
  const queryClient = useQueryClient();
  return useFormMutation({
    mutationFn: ({ flag, environment, enabled }: Toggle) =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle', {
          params: { path: { org, project, flag, env: environment.key ?? environment.id } },
          body: { enabled },
        }),
      ),
    onSettled: (_data, _error, { flag }) =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, flag) }),
        queryClient.invalidateQueries({ queryKey: queryKeys.flags(org, project) }),
      ]),
  });
}

/**
 * Asks before a toggle in a critical environment is sent, and sends it otherwise: `request`
 * for the switches, `dialog` to render once beside them (one for any number of switches).
 */
export function useConfirmedToggle(send: (toggle: Toggle) => void) {
  const [asked, setAsked] = useState<{ toggle: Toggle; open: boolean } | null>(null);
  // The same function for as long as `send` is (the flag list's rows are memoized on it).
  const request = useCallback(
    (toggle: Toggle) => {
      if (isCritical(toggle.environment)) setAsked({ toggle, open: true });
      else send(toggle);
    },
    [send],
  );
  // The last toggle asked stays in state while the dialog closes, so its text does not change.
  const toggle = asked?.toggle;
  const name = toggle ? environmentName(toggle.environment) : '';
  const state = toggle?.enabled ? 'on' : 'off';
  const dialog = (
    <AlertDialog.Root
      open={asked?.open ?? false}
      onOpenChange={(open) => !open && asked && setAsked({ ...asked, open: false })}
    >
      {toggle && (
        <AlertDialog.Content className="dialog-body">
          <AlertDialog.Title>
            Turn {toggle.flag} {state} in {name}?
          </AlertDialog.Title>
          <AlertDialog.Description>
            {name} is a critical environment: SDKs there receive the change within seconds.
          </AlertDialog.Description>
          <DialogActions
            alert
            confirmLabel={`Turn ${state} in ${name}`}
            onConfirm={() => send(toggle)}
          />
        </AlertDialog.Content>
      )}
    </AlertDialog.Root>
  );
  return { request, dialog };
}

function environmentName(environment: Environment): string {
  return environment.name ?? environment.key ?? '';
}

/**
 * Why a switch cannot be used, or '' when it can: the environment requires change requests, or
 * `allowed` refuses (with the API's reason).
 */
export function toggleNote(environment: Environment, allowed: ToggleAllowed): string {
  if (environment.changeRequests.required)
    return `Changes in ${environmentName(environment)} go through review.`;
  return allowed?.allowed ? '' : (allowed?.reason ?? '');
}

/**
 * A flag list's switch for one flag in one environment, named by both (no visible label); its
 * note is read to screen readers and shown when the toggle failed. A native checkbox with the
 * switch role, without hooks, so that a page of rows stays cheap to render (design record 050):
 * `request` and the mutation's state come from the list, which holds one mutation and one
 * confirmation dialog for all of its switches.
 */
export function ListToggle(props: {
  flag: { id: string; key: string };
  environment: Environment;
  enabled: boolean;
  allowed: ToggleAllowed;
  pending: boolean;
  error: Error | null;
  request: (toggle: Toggle) => void;
}) {
  const { flag, environment, allowed, error } = props;
  const noteId = `toggle-${flag.id}-${environment.id}`;
  return (
    <div className="toggle">
      <input
        type="checkbox"
        role="switch"
        className="list-switch"
        checked={props.enabled}
        disabled={environment.changeRequests.required || !allowed?.allowed || props.pending}
        onChange={(event) =>
          props.request({ flag: flag.key, environment, enabled: event.target.checked })
        }
        aria-label={`${flag.key} in ${environmentName(environment)}`}
        aria-describedby={noteId}
      />
      <span id={noteId} className={error ? 'field-error' : 'visually-hidden'}>
        {error?.message ?? toggleNote(environment, allowed)}
      </span>
    </div>
  );
}

/**
 * On/off for one flag in one environment on the flag's page (`POST …/toggle`), labelled "On in
 * …"; a critical environment asks first. Disabled, with the API's reason, when `allowed` refuses
 * (`_actions.toggle`).
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
  allowed: ToggleAllowed;
}) {
  const { org, project, flag, environment, allowed } = props;
  const id = useId();
  const toggle = useToggleMutation(org, project);
  const confirmed = useConfirmedToggle(toggle.mutate);
  const name = environmentName(environment);
  const policy = environment.changeRequests;

  return (
    <div className="toggle">
      <Switch
        id={id}
        color="green"
        // Read-only in a protected environment, yet showing its state: On stays green.
        className={policy.required ? 'read-only-switch' : undefined}
        checked={props.enabled}
        disabled={policy.required || !allowed?.allowed || toggle.isPending}
        onCheckedChange={(enabled) => confirmed.request({ flag, environment, enabled })}
        aria-describedby={`${id}-note`}
      />
      <label htmlFor={id}>On in {name}</label>
      <span id={`${id}-note`} className={toggle.error ? 'field-error' : 'hint'}>
        {toggle.error?.message ?? toggleNote(environment, allowed)}
      </span>
      {policy.required && policy.emergencyOff && props.enabled && (
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
              onConfirm={() => toggle.mutate({ flag, environment, enabled: false })}
            />
          </AlertDialog.Content>
        </AlertDialog.Root>
      )}
      {confirmed.dialog}
    </div>
  );
}
