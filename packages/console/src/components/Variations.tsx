import { useMutation, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Dialog } from 'radix-ui';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../api/client';
import type { Flag } from '../api/types';
import { DialogActions } from './DialogActions';
import { Field, Labelled } from './Field';

type Variation = Flag['variations'][number];

/**
 * A flag's variations (journey 3): listed, added, edited (name, value, description) and
 * deleted. The API checks values against the flag's type and refuses to delete a variation that
 * is served somewhere (409, shown in the dialog); its messages appear at their fields.
 */
export function Variations({ org, project, flag }: { org: string; project: string; flag: Flag }) {
  const canEdit = flag._actions['createVariation']?.allowed ?? false;
  return (
    <section aria-labelledby="variations-heading">
      <div className="page-heading">
        <h2 id="variations-heading">Variations</h2>
        {canEdit && (
          <VariationDialog
            org={org}
            project={project}
            flag={flag}
            trigger={<button type="button">Add variation</button>}
          />
        )}
      </div>
      <table>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
            <th scope="col">Description</th>
            {canEdit && (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {flag.variations.map((variation) => (
            <tr key={variation.id}>
              <td>
                <code>{variation.key}</code>
              </td>
              <td>{variation.name}</td>
              <td>
                <code>{variation.value}</code>
              </td>
              <td>{variation.description}</td>
              {canEdit && (
                <td className="row">
                  <VariationDialog
                    org={org}
                    project={project}
                    flag={flag}
                    variation={variation}
                    trigger={
                      <button type="button" className="quiet">
                        Edit variation {variation.key}
                      </button>
                    }
                  />
                  <DeleteVariation org={org} project={project} flag={flag} variation={variation} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function VariationDialog(props: {
  org: string;
  project: string;
  flag: Flag;
  variation?: Variation;
  trigger: React.ReactNode;
}) {
  const { org, project, flag, variation } = props;
  const [open, setOpen] = useState(false);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [description, setDescription] = useState('');
  const queryClient = useQueryClient();
  const flagKey = flag.key ?? flag.id;

  const save = useMutation({
    mutationFn: () => {
      const fields = {
        name: name.trim() || null,
        value,
        description: description.trim() || null,
      };
      return variation
        ? unwrap(
            api.PATCH('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}', {
              params: { path: { org, project, flag: flagKey, variation: variation.id } },
              body: fields,
            }),
          )
        : unwrap(
            api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations', {
              params: { path: { org, project, flag: flagKey } },
              body: { key: key.trim(), ...fields },
            }),
          );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['flag', org, project, flagKey] });
      setOpen(false);
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  const title = variation ? `Edit variation ${variation.key ?? ''}` : 'New variation';

  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        if (next) {
          setKey(variation?.key ?? '');
          setName(variation?.name ?? '');
          setValue(variation?.value ?? '');
          setDescription(variation?.description ?? '');
          save.reset();
        }
        setOpen(next);
      }}
    >
      <Dialog.Trigger asChild>{props.trigger}</Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title>{title}</Dialog.Title>
          <Dialog.Description className="hint">
            A {flag.type} flag: the value must be a {flag.type === 'Json' ? 'JSON' : flag.type}{' '}
            value. SDKs receive the change within seconds.
          </Dialog.Description>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              save.mutate();
            }}
          >
            {!variation && (
              <Field
                label="Variation key"
                required
                autoComplete="off"
                value={key}
                onChange={(event) => setKey(event.target.value)}
                error={problem?.field('key')}
              />
            )}
            <Field
              label="Variation name"
              value={name}
              onChange={(event) => setName(event.target.value)}
              error={problem?.field('name')}
            />
            <Labelled label="Variation value" error={problem?.field('value')}>
              {(id, describedBy) => (
                <textarea
                  id={id}
                  rows={flag.type === 'Json' ? 4 : 1}
                  required
                  aria-describedby={describedBy}
                  aria-invalid={Boolean(problem?.field('value'))}
                  value={value}
                  onChange={(event) => setValue(event.target.value)}
                />
              )}
            </Labelled>
            <Field
              label="Variation description"
              value={description}
              onChange={(event) => setDescription(event.target.value)}
              error={problem?.field('description')}
            />
            {save.error && !problem?.field('key') && !problem?.field('value') && (
              <p role="alert" className="field-error">
                {save.error.message}
              </p>
            )}
            <DialogActions
              confirmLabel={variation ? 'Save variation' : 'Add variation'}
              busy={save.isPending}
            />
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

function DeleteVariation(props: {
  org: string;
  project: string;
  flag: Flag;
  variation: Variation;
}) {
  const { org, project, flag, variation } = props;
  const [open, setOpen] = useState(false);
  const queryClient = useQueryClient();
  const flagKey = flag.key ?? flag.id;
  const remove = useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}', {
          params: { path: { org, project, flag: flagKey, variation: variation.id } },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['flag', org, project, flagKey] });
      setOpen(false);
    },
  });
  return (
    <AlertDialog.Root
      open={open}
      onOpenChange={(next) => {
        if (next) remove.reset();
        setOpen(next);
      }}
    >
      <AlertDialog.Trigger asChild>
        <button type="button" className="quiet">
          Delete variation {variation.key}
        </button>
      </AlertDialog.Trigger>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="overlay" />
        <AlertDialog.Content className="dialog">
          <AlertDialog.Title>Delete variation {variation.key}?</AlertDialog.Title>
          <AlertDialog.Description>
            A variation that an environment serves (default, off, rollout or rule) cannot be
            deleted: change what is served first.
          </AlertDialog.Description>
          {remove.error && (
            <p role="alert" className="field-error">
              {remove.error.message}
            </p>
          )}
          <DialogActions
            alert
            keepOpen
            confirmLabel="Delete variation"
            busy={remove.isPending}
            onConfirm={() => remove.mutate()}
          />
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
