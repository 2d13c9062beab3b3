import { useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Button } from '@radix-ui/themes';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Flag } from '../api/types';
import { DialogActions } from './DialogActions';
import { Labelled } from './Field';
import { FormDialog } from './FormDialog';
import { KeyNameFields } from './KeyNameFields';
import { useFormMutation } from './useFormMutation';
import { queryKeys } from '../api/query-keys';

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
        {canEdit && <VariationDialog org={org} project={project} flag={flag} />}
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
                  <VariationDialog org={org} project={project} flag={flag} variation={variation} />
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

function draftOf(variation: Variation | undefined) {
  return {
    key: variation?.key ?? '',
    name: variation?.name ?? '',
    value: variation?.value ?? '',
    description: variation?.description ?? '',
  };
}

/** "Add variation", or "Edit variation …" for `variation`. */
function VariationDialog(props: {
  org: string;
  project: string;
  flag: Flag;
  variation?: Variation;
}) {
  const { org, project, flag, variation } = props;
  const [draft, setDraft] = useState(() => draftOf(variation));
  const queryClient = useQueryClient();
  const flagKey = flag.key ?? flag.id;

  const save = useFormMutation({
    mutationFn: () => {
      const fields = {
        name: draft.name.trim() || null,
        value: draft.value,
        description: draft.description.trim() || null,
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
              body: { key: draft.key.trim(), ...fields },
            }),
          );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, flagKey) });
    },
  });
  const valueProblem = save.problemAt('value');

  return (
    <FormDialog
      label={variation ? `Edit variation ${variation.key ?? ''}` : 'Add variation'}
      quiet={variation !== undefined}
      title={variation ? `Edit variation ${variation.key ?? ''}` : 'New variation'}
      description={
        <>
          A {flag.type} flag: the value must be a {flag.type === 'Json' ? 'JSON' : flag.type} value.
          SDKs receive the change within seconds.
        </>
      }
      form={save}
      confirmLabel={variation ? 'Save variation' : 'Add variation'}
      onOpen={() => setDraft(draftOf(variation))}
    >
      <KeyNameFields
        noun="Variation"
        withKey={!variation}
        draft={draft}
        onChange={setDraft}
        problemAt={save.problemAt}
      >
        <Labelled label="Variation value" error={valueProblem}>
          {(id, describedBy) => (
            <textarea
              id={id}
              rows={flag.type === 'Json' ? 4 : 1}
              required
              aria-describedby={describedBy}
              aria-invalid={valueProblem !== undefined}
              value={draft.value}
              onChange={(event) => setDraft({ ...draft, value: event.target.value })}
            />
          )}
        </Labelled>
      </KeyNameFields>
    </FormDialog>
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
  const remove = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}', {
          params: { path: { org, project, flag: flagKey, variation: variation.id } },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, flagKey) });
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
      <AlertDialog.Trigger>
        <Button type="button" variant="soft" color="gray">
          Delete variation {variation.key}
        </Button>
      </AlertDialog.Trigger>
      <AlertDialog.Content className="dialog-body">
        <AlertDialog.Title>Delete variation {variation.key}?</AlertDialog.Title>
        <AlertDialog.Description>
          A variation that an environment serves (default, off, rollout or rule) cannot be deleted:
          change what is served first.
        </AlertDialog.Description>
        {remove.error && (
          <p role="alert" className="field-error">
            {remove.error.message}
          </p>
        )}
        <DialogActions
          alert
          keepOpen
          danger
          confirmLabel="Delete variation"
          busy={remove.isPending}
          onConfirm={() => remove.mutate()}
        />
      </AlertDialog.Content>
    </AlertDialog.Root>
  );
}
