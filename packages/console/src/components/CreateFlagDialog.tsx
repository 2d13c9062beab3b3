import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { Field } from './Field';
import { FormDialog } from './FormDialog';
import { useFormMutation } from './useFormMutation';

const TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;

const EMPTY_DRAFT = {
  key: '',
  name: '',
  type: 'Boolean' as (typeof TYPES)[number],
  description: '',
};

/** "New flag": key, name, type and description; the API's field errors appear at each field. */
export function CreateFlagDialog({ org, project }: { org: string; project: string }) {
  const [draft, setDraft] = useState(EMPTY_DRAFT);
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();

  const create = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags', {
          params: { path: { org, project } },
          body: {
            key: draft.key.trim(),
            type: draft.type,
            ...(draft.name.trim() ? { name: draft.name.trim() } : {}),
            ...(draft.description.trim() ? { description: draft.description.trim() } : {}),
          },
        }),
      ),
    onSuccess: (flag) => {
      void queryClient.invalidateQueries({ queryKey: ['flags', org, project] });
      navigate(`/orgs/${org}/projects/${project}/flags/${flag.key}`);
    },
  });

  return (
    <FormDialog
      label="New flag"
      title="New flag"
      description="A Boolean flag starts with the variations true and false, off everywhere."
      form={create}
      confirmLabel="Create flag"
      onOpen={() => setDraft(EMPTY_DRAFT)}
    >
      <Field
        label="Key"
        required
        autoComplete="off"
        value={draft.key}
        onChange={(event) => setDraft({ ...draft, key: event.target.value })}
        hint="Letters, digits, '.', '_' and '-'; what your code asks for."
        error={create.problemAt('key')}
      />
      <Field
        label="Name"
        value={draft.name}
        onChange={(event) => setDraft({ ...draft, name: event.target.value })}
        error={create.problemAt('name')}
      />
      <div className="field">
        <label htmlFor="flag-type">Type</label>
        <select
          id="flag-type"
          value={draft.type}
          onChange={(event) =>
            setDraft({ ...draft, type: event.target.value as (typeof TYPES)[number] })
          }
        >
          {TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </div>
      <Field
        label="Description"
        value={draft.description}
        onChange={(event) => setDraft({ ...draft, description: event.target.value })}
        error={create.problemAt('description')}
      />
    </FormDialog>
  );
}
