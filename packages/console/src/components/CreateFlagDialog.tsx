import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Dialog } from 'radix-ui';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import { Field } from './Field';
import { DialogActions } from './DialogActions';

const TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;

/** "New flag": key, name, type and description; the API's field errors appear at each field. */
export function CreateFlagDialog({ org, project }: { org: string; project: string }) {
  const [open, setOpen] = useState(false);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [type, setType] = useState<(typeof TYPES)[number]>('Boolean');
  const [description, setDescription] = useState('');
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();

  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags', {
          params: { path: { org, project } },
          body: {
            key: key.trim(),
            type,
            ...(name.trim() ? { name: name.trim() } : {}),
            ...(description.trim() ? { description: description.trim() } : {}),
          },
        }),
      ),
    onSuccess: (flag) => {
      void queryClient.invalidateQueries({ queryKey: ['flags', org, project] });
      setOpen(false);
      navigate(`/orgs/${org}/projects/${project}/flags/${flag.key}`);
    },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;

  return (
    <Dialog.Root open={open} onOpenChange={setOpen}>
      <Dialog.Trigger asChild>
        <button type="button">New flag</button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title>New flag</Dialog.Title>
          <Dialog.Description className="hint">
            A Boolean flag starts with the variations true and false, off everywhere.
          </Dialog.Description>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              create.mutate();
            }}
          >
            <Field
              label="Key"
              required
              autoComplete="off"
              value={key}
              onChange={(event) => setKey(event.target.value)}
              hint="Letters, digits, '.', '_' and '-'; what your code asks for."
              error={problem?.field('key')}
            />
            <Field
              label="Name"
              value={name}
              onChange={(event) => setName(event.target.value)}
              error={problem?.field('name')}
            />
            <div className="field">
              <label htmlFor="flag-type">Type</label>
              <select
                id="flag-type"
                value={type}
                onChange={(event) => setType(event.target.value as (typeof TYPES)[number])}
              >
                {TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </div>
            <Field
              label="Description"
              value={description}
              onChange={(event) => setDescription(event.target.value)}
              error={problem?.field('description')}
            />
            {create.error && !problem?.field('key') && (
              <p role="alert" className="field-error">
                {create.error.message}
              </p>
            )}
            <DialogActions confirmLabel="Create flag" busy={create.isPending} />
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
