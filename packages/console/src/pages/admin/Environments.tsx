import { Button } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { Environment } from '../../api/types';
import { ActionsTableHead } from '../../components/ActionsTableHead';
import { ApprovalWarning } from '../../components/change-requests/ApprovalWarning';
import { ConfirmButton } from '../../components/ConfirmButton';
import { Field, Labelled } from '../../components/Field';
import { useOrganization } from '../../components/people/organization';
import { KeyNameFields } from '../../components/KeyNameFields';
import { FormDialog } from '../../components/FormDialog';
import { useFormMutation } from '../../components/useFormMutation';
import { useResourceActions } from '../../components/useResourceActions';
import { queryKeys } from '../../api/query-keys';

interface Draft {
  key: string;
  name: string;
  color: string;
  critical: boolean;
  /** The change-request policy (change-requests.md section 1), set by Admins. */
  reviewRequired: boolean;
  approvals: number;
  emergencyOff: boolean;
}

/**
 * Journey 7, environments: create, edit (name, colour, critical), order with "Move up/down"
 * (each environment's `sortOrder` becomes its position) and delete. Buttons follow `_actions`.
 */
export function Environments({ org, project }: { org: string; project: string }) {
  const queryClient = useQueryClient();
  const environments = useQuery({
    queryKey: queryKeys.environments(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/environments', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
  const items = environments.data?.items ?? [];
  const reorder = useFormMutation({
    mutationFn: async (order: Environment[]) => {
      for (const [index, environment] of order.entries()) {
        if (environment.sortOrder === index) continue;
        await unwrap(
          api.PATCH('/api/v1/orgs/{org}/projects/{project}/environments/{env}', {
            params: { path: { org, project, env: environment.id } },
            body: { sortOrder: index },
          }),
        );
      }
    },
    onSettled: () =>
      queryClient.invalidateQueries({ queryKey: queryKeys.environments(org, project) }),
  });

  function move(index: number, by: -1 | 1) {
    const order = [...items];
    const [moved] = order.splice(index, 1);
    if (!moved) return;
    order.splice(index + by, 0, moved);
    reorder.mutate(order);
  }

  return (
    <>
      <div className="page-heading">
        <h1>Environments</h1>
        {environments.data?._actions['create']?.allowed && (
          <EnvironmentDialog org={org} project={project} sortOrder={items.length} />
        )}
      </div>
      <p className="hint">
        Each environment has its own configuration of every flag and its own SDK keys. Changes in a
        critical environment ask for confirmation first; in one that requires review, they go
        through a change request approved by someone else.
      </p>
      {reorder.error && (
        <p role="alert" className="field-error">
          Not reordered: {reorder.error.message}
        </p>
      )}
      {environments.error && <p role="alert">{environments.error.message}</p>}
      <table>
        <ActionsTableHead columns={['Environment', 'Key', 'Colour', 'Critical', 'Review']} />
        <tbody>
          {items.map((environment, index) => (
            <EnvironmentRow
              key={environment.id}
              org={org}
              project={project}
              environment={environment}
              first={index === 0}
              last={index === items.length - 1}
              moving={reorder.isPending}
              onMove={(by) => move(index, by)}
            />
          ))}
        </tbody>
      </table>
    </>
  );
}

function EnvironmentRow(props: {
  org: string;
  project: string;
  environment: Environment;
  first: boolean;
  last: boolean;
  moving: boolean;
  onMove: (by: -1 | 1) => void;
}) {
  const { org, project, environment } = props;
  const name = environment.name ?? environment.key ?? environment.id;
  const path = { org, project, env: environment.id };
  const can = useResourceActions(queryKeys.environmentActions(org, project, environment.id), () =>
    unwrap(
      api.GET('/api/v1/orgs/{org}/projects/{project}/environments/{env}', {
        params: { path },
      }),
    ),
  );
  return (
    <tr>
      <th scope="row">{name}</th>
      <td>
        <code>{environment.key}</code>
      </td>
      <td>
        {environment.color ? (
          <span className="swatch-row">
            <span className="swatch" style={{ background: environment.color }} aria-hidden />
            {environment.color}
          </span>
        ) : (
          '—'
        )}
      </td>
      <td>{environment.critical ? <span className="badge">Critical</span> : 'No'}</td>
      <td>{policyInWords(environment.changeRequests)}</td>
      <td>
        <div className="row">
          {can('update').allowed && (
            <>
              <Button
                type="button"
                variant="soft"
                color="gray"
                aria-label={`Move ${name} up`}
                disabled={props.first || props.moving}
                onClick={() => props.onMove(-1)}
              >
                Up
              </Button>
              <Button
                type="button"
                variant="soft"
                color="gray"
                aria-label={`Move ${name} down`}
                disabled={props.last || props.moving}
                onClick={() => props.onMove(1)}
              >
                Down
              </Button>
              <EnvironmentDialog org={org} project={project} environment={environment} />
            </>
          )}
          {can('delete').allowed && (
            <DeleteEnvironment org={org} project={project} environment={environment} />
          )}
        </div>
      </td>
    </tr>
  );
}

/** "New environment", or "Edit" of one: key (new only), name, colour and the critical mark. */
function EnvironmentDialog(props: {
  org: string;
  project: string;
  environment?: Environment;
  sortOrder?: number;
}) {
  const { org, project, environment } = props;
  const initial = (): Draft => ({
    key: environment?.key ?? '',
    name: environment?.name ?? '',
    color: environment?.color ?? '',
    critical: environment?.critical ?? false,
    reviewRequired: environment?.changeRequests.required ?? false,
    approvals: environment?.changeRequests.approvals ?? 1,
    emergencyOff: environment?.changeRequests.emergencyOff ?? true,
  });
  // The policy is an Admin's to set: Members see it in the table, not in the form.
  const isAdmin = useOrganization(org).data?._actions['manageMembers']?.allowed === true;
  const setsPolicy = environment !== undefined && isAdmin;
  const [draft, setDraft] = useState(initial);
  const queryClient = useQueryClient();
  const title = environment ? `Edit ${environment.name ?? environment.key}` : 'New environment';
  const save = useFormMutation({
    mutationFn: () => {
      const fields = {
        name: draft.name.trim() || null,
        color: draft.color.trim() || null,
        critical: draft.critical,
      };
      return environment
        ? unwrap(
            api.PATCH('/api/v1/orgs/{org}/projects/{project}/environments/{env}', {
              params: { path: { org, project, env: environment.id } },
              body: {
                ...fields,
                ...(setsPolicy
                  ? {
                      changeRequests: {
                        required: draft.reviewRequired,
                        approvals: draft.approvals,
                        emergencyOff: draft.emergencyOff,
                      },
                    }
                  : {}),
              },
            }),
          )
        : unwrap(
            api.POST('/api/v1/orgs/{org}/projects/{project}/environments', {
              params: { path: { org, project } },
              body: { key: draft.key.trim(), sortOrder: props.sortOrder ?? 0, ...fields },
            }),
          );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.environments(org, project) });
    },
  });
  return (
    <FormDialog
      label={environment ? 'Edit' : 'New environment'}
      ariaLabel={environment ? title : undefined}
      quiet={environment !== undefined}
      title={title}
      description={
        environment
          ? 'The key stays; SDK keys and flag configurations are kept.'
          : 'Every flag starts off here, with its off variation.'
      }
      form={save}
      confirmLabel={environment ? 'Save environment' : 'Create environment'}
      onOpen={() => setDraft(initial())}
    >
      <KeyNameFields
        withKey={!environment}
        keyHint="Letters, digits, '.', '_' and '-'; what SDK configuration names."
        draft={draft}
        onChange={setDraft}
        problemAt={save.problemAt}
      />
      <Field
        label="Colour"
        value={draft.color}
        placeholder="#1f6feb"
        onChange={(event) => setDraft({ ...draft, color: event.target.value })}
        hint="A hex colour such as #1f6feb; empty for none."
        error={save.problemAt('color')}
      />
      <label className="check">
        <input
          type="checkbox"
          checked={draft.critical}
          onChange={(event) => setDraft({ ...draft, critical: event.target.checked })}
        />
        Critical: turning flags on or off here asks for confirmation
      </label>
      {setsPolicy && (
        <fieldset className="policy">
          <legend>Change requests</legend>
          <label className="check">
            <input
              type="checkbox"
              checked={draft.reviewRequired}
              onChange={(event) => setDraft({ ...draft, reviewRequired: event.target.checked })}
            />
            Require a reviewed change request for every change to what this environment serves
          </label>
          <Labelled label="Approvals needed" error={save.problemAt('changeRequests.approvals')}>
            {(id, describedBy) => (
              <select
                id={id}
                aria-describedby={describedBy}
                value={draft.approvals}
                disabled={!draft.reviewRequired}
                onChange={(event) => setDraft({ ...draft, approvals: Number(event.target.value) })}
              >
                {[1, 2, 3, 4, 5].map((count) => (
                  <option key={count} value={count}>
                    {count}
                  </option>
                ))}
              </select>
            )}
          </Labelled>
          {draft.reviewRequired && <ApprovalWarning org={org} approvals={draft.approvals} />}
          <label className="check">
            <input
              type="checkbox"
              checked={draft.emergencyOff}
              disabled={!draft.reviewRequired}
              onChange={(event) => setDraft({ ...draft, emergencyOff: event.target.checked })}
            />
            Allow emergency off: Members may turn a flag off at once, without review (audited)
          </label>
          {save.problemAt('changeRequests') && !save.problemAt('changeRequests.approvals') && (
            <p role="alert" className="field-error">
              {save.problemAt('changeRequests')}
            </p>
          )}
        </fieldset>
      )}
    </FormDialog>
  );
}

function DeleteEnvironment(props: { org: string; project: string; environment: Environment }) {
  const { org, project, environment } = props;
  const name = environment.name ?? environment.key ?? environment.id;
  const queryClient = useQueryClient();
  const remove = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/environments/{env}', {
          params: { path: { org, project, env: environment.id } },
        }),
      ),
    onSuccess: () =>
      queryClient.invalidateQueries({ queryKey: queryKeys.environments(org, project) }),
  });
  return (
    <>
      <ConfirmButton
        label="Delete"
        ariaLabel={`Delete ${name}`}
        title={`Delete ${name}?`}
        description="Its flag configurations and SDK keys go with it; SDKs using those keys stop receiving configuration. Webhook filters naming it lose it."
        confirm={`Delete ${name}`}
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
      {remove.error && (
        <span role="alert" className="field-error">
          {remove.error.message}
        </span>
      )}
    </>
  );
}

/** The change-request policy in a table cell: "Required, 2 approvals" or "No". */
function policyInWords(policy: Environment['changeRequests']): string {
  if (!policy.required) return 'No';
  const approvals = `${policy.approvals} ${policy.approvals === 1 ? 'approval' : 'approvals'}`;
  return `Required, ${approvals}${policy.emergencyOff ? '' : ', no emergency off'}`;
}
