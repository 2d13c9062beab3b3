import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Dialog } from 'radix-ui';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../../api/client';
import type { Environment } from '../../api/types';
import { DialogActions } from '../../components/DialogActions';
import { Field } from '../../components/Field';
import { useResourceActions } from '../../components/useResourceActions';

interface Draft {
  key: string;
  name: string;
  color: string;
  critical: boolean;
}

/**
 * Journey 7, environments: create, edit (name, colour, critical), order with "Move up/down"
 * (each environment's `sortOrder` becomes its position) and delete. Buttons follow `_actions`.
 */
export function Environments({ org, project }: { org: string; project: string }) {
  const queryClient = useQueryClient();
  const environments = useQuery({
    queryKey: ['environments', org, project],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/environments', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
  const items = environments.data?.items ?? [];
  const reorder = useMutation({
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
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['environments', org, project] }),
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
        critical environment ask for confirmation first.
      </p>
      {reorder.error && (
        <p role="alert" className="field-error">
          Not reordered: {reorder.error.message}
        </p>
      )}
      {environments.error && <p role="alert">{environments.error.message}</p>}
      <table>
        <thead>
          <tr>
            <th scope="col">Environment</th>
            <th scope="col">Key</th>
            <th scope="col">Colour</th>
            <th scope="col">Critical</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
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
  const can = useResourceActions(['environment', org, project, environment.id], () =>
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
      <td>
        <div className="row">
          {can('update').allowed && (
            <>
              <button
                type="button"
                className="quiet"
                aria-label={`Move ${name} up`}
                disabled={props.first || props.moving}
                onClick={() => props.onMove(-1)}
              >
                Move up
              </button>
              <button
                type="button"
                className="quiet"
                aria-label={`Move ${name} down`}
                disabled={props.last || props.moving}
                onClick={() => props.onMove(1)}
              >
                Move down
              </button>
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
  });
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState(initial);
  const queryClient = useQueryClient();
  const title = environment ? `Edit ${environment.name ?? environment.key}` : 'New environment';
  const save = useMutation({
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
              body: fields,
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
      void queryClient.invalidateQueries({ queryKey: ['environments', org, project] });
      setOpen(false);
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  const shownAtField = problem && Object.keys(problem.fields).length > 0;
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        if (next) {
          setDraft(initial());
          save.reset();
        }
        setOpen(next);
      }}
    >
      <Dialog.Trigger asChild>
        <button
          type="button"
          className={environment ? 'quiet' : undefined}
          aria-label={environment ? `Edit ${environment.name ?? environment.key}` : undefined}
        >
          {environment ? 'Edit' : 'New environment'}
        </button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title>{title}</Dialog.Title>
          <Dialog.Description className="hint">
            {environment
              ? 'The key stays; SDK keys and flag configurations are kept.'
              : 'Every flag starts off here, with its off variation.'}
          </Dialog.Description>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              save.mutate();
            }}
          >
            {!environment && (
              <Field
                label="Key"
                required
                autoComplete="off"
                value={draft.key}
                onChange={(event) => setDraft({ ...draft, key: event.target.value })}
                hint="Letters, digits, '.', '_' and '-'; what SDK configuration names."
                error={problem?.field('key')}
              />
            )}
            <Field
              label="Name"
              value={draft.name}
              onChange={(event) => setDraft({ ...draft, name: event.target.value })}
              error={problem?.field('name')}
            />
            <Field
              label="Colour"
              value={draft.color}
              placeholder="#1f6feb"
              onChange={(event) => setDraft({ ...draft, color: event.target.value })}
              hint="A hex colour such as #1f6feb; empty for none."
              error={problem?.field('color')}
            />
            <label className="check">
              <input
                type="checkbox"
                checked={draft.critical}
                onChange={(event) => setDraft({ ...draft, critical: event.target.checked })}
              />
              Critical: turning flags on or off here asks for confirmation
            </label>
            {save.error && !shownAtField && (
              <p role="alert" className="field-error">
                {save.error.message}
              </p>
            )}
            <DialogActions
              confirmLabel={environment ? 'Save environment' : 'Create environment'}
              busy={save.isPending}
            />
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

function DeleteEnvironment(props: { org: string; project: string; environment: Environment }) {
  const { org, project, environment } = props;
  const name = environment.name ?? environment.key ?? environment.id;
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/environments/{env}', {
          params: { path: { org, project, env: environment.id } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['environments', org, project] }),
  });
  return (
    <>
      <AlertDialog.Root>
        <AlertDialog.Trigger asChild>
          <button type="button" className="quiet" aria-label={`Delete ${name}`}>
            Delete
          </button>
        </AlertDialog.Trigger>
        <AlertDialog.Portal>
          <AlertDialog.Overlay className="overlay" />
          <AlertDialog.Content className="dialog">
            <AlertDialog.Title>Delete {name}?</AlertDialog.Title>
            <AlertDialog.Description>
              Its flag configurations and SDK keys go with it; SDKs using those keys stop receiving
              configuration. Webhook filters naming it lose it.
            </AlertDialog.Description>
            <DialogActions
              alert
              confirmLabel={`Delete ${name}`}
              busy={remove.isPending}
              onConfirm={() => remove.mutate()}
            />
          </AlertDialog.Content>
        </AlertDialog.Portal>
      </AlertDialog.Root>
      {remove.error && (
        <span role="alert" className="field-error">
          {remove.error.message}
        </span>
      )}
    </>
  );
}
