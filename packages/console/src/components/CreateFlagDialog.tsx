import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import { Field, Labelled } from './Field';
import { FormDialog } from './FormDialog';
import { useFormMutation } from './useFormMutation';
import { KeyNameFields } from './KeyNameFields';
import {
  MIN_VARIATIONS,
  valueProblem,
  VariationsEditor,
  type VariationDraft,
} from './VariationsEditor';
import { queryKeys } from '../api/query-keys';

const TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;
type FlagType = (typeof TYPES)[number];

/** The fields this dialog shows the API's messages at; any other message is shown above its actions. */
const SHOWN_FIELDS = ['key', 'name', 'description', 'tags', 'clientSideVisible', 'variations'];

const EMPTY_DRAFT = {
  name: '',
  key: '',
  type: 'Boolean' as FlagType,
  description: '',
  tags: '',
  clientSideVisible: false,
  variations: Array.from({ length: MIN_VARIATIONS }, (): VariationDraft => ({
    key: '',
    value: '',
  })),
};

const DESCRIPTIONS: Record<FlagType, string> = {
  Boolean: 'A Boolean flag starts with the variations true and false, off everywhere.',
  String: 'A String flag serves one of its text variations; off, it serves the first.',
  Number: 'A Number flag serves one of its number variations; off, it serves the first.',
  Json: 'A Json flag serves one of its JSON variations; off, it serves the first.',
};

/**
 * "New flag": name, key (made from the name until typed, `KeyNameFields`), type, description,
 * tags, client-side visibility and, for a String, Number or Json flag, its variations; the API's field errors appear at each field, and
 * any other refusal above the dialog's actions (design record 038).
 */
export function CreateFlagDialog({ org, project }: { org: string; project: string }) {
  const [draft, setDraft] = useState(EMPTY_DRAFT);
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const tags = draft.tags
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);

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
            ...(tags.length > 0 ? { tags } : {}),
            ...(draft.clientSideVisible ? { clientSideVisible: true } : {}),
            ...(draft.type === 'Boolean'
              ? {}
              : {
                  variations: draft.variations.map((v) => ({ key: v.key.trim(), value: v.value })),
                }),
          },
        }),
      ),
    onSuccess: (flag) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.flags(org, project) });
      navigate(`/orgs/${org}/projects/${project}/flags/${flag.key}`);
    },
  });
  // A refusal on a field this dialog has no control for is still said (the typed text stays).
  const fields = create.error instanceof ApiProblem ? create.error.fields : {};
  const stray = Object.entries(fields)
    .filter(([field]) => !SHOWN_FIELDS.includes(field.split('.')[0] ?? ''))
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`);
  const typedProblem =
    draft.type !== 'Boolean' &&
    draft.variations.some((v) => v.value !== '' && valueProblem(draft.type as 'Json', v.value));

  return (
    <FormDialog
      label="New flag"
      title="New flag"
      description={DESCRIPTIONS[draft.type]}
      wide={draft.type !== 'Boolean'}
      form={{
        ...create,
        // A value that does not parse is shown at its field; sending it would only be refused.
        submit: (event) => (typedProblem ? event.preventDefault() : create.submit(event)),
      }}
      confirmLabel="Create flag"
      onOpen={() => setDraft(EMPTY_DRAFT)}
    >
      <KeyNameFields
        keyFromName
        draft={draft}
        onChange={setDraft}
        problemAt={create.problemAt}
        keyHint="Letters, digits, '.', '_' and '-'; what your code asks for. Made from the name until you type one."
      >
        <Labelled label="Type">
          {(id) => (
            <select
              id={id}
              value={draft.type}
              onChange={(event) => setDraft({ ...draft, type: event.target.value as FlagType })}
            >
              {TYPES.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          )}
        </Labelled>
        {draft.type !== 'Boolean' && (
          <VariationsEditor
            type={draft.type}
            variations={draft.variations}
            onChange={(variations) => setDraft({ ...draft, variations })}
            problemAt={create.problemAt}
          />
        )}
      </KeyNameFields>
      <Field
        label="Tags"
        value={draft.tags}
        autoComplete="off"
        onChange={(event) => setDraft({ ...draft, tags: event.target.value })}
        hint="Separated by commas, such as checkout, experiment."
        error={create.problemAt('tags')}
      />
      <label className="check">
        <input
          type="checkbox"
          checked={draft.clientSideVisible}
          onChange={(event) => setDraft({ ...draft, clientSideVisible: event.target.checked })}
        />
        Visible to client-side SDKs
      </label>
      <p className="hint">
        Client keys (browsers, mobile apps) see only such flags; server keys see every flag.
      </p>
      {stray.length > 0 && (
        <p role="alert" className="field-error">
          {stray.join(' ')}
        </p>
      )}
    </FormDialog>
  );
}
