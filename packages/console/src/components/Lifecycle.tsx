import { useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Button, TextField } from '@radix-ui/themes';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../api/client';
import type { Flag } from '../api/types';
import { Labelled } from './Field';
import { DialogActions } from './DialogActions';
import { useFormMutation } from './useFormMutation';
import { queryKeys } from '../api/query-keys';

/**
 * Archive and restore, with the spec's guards said in words (the API's message: code on a
 * default branch still reads the flag, naming the places, or it was evaluated recently) and
 * "Archive anyway" as the explicit override; and the flag's expiry (journey 3).
 */
export function Lifecycle({ org, project, flag }: { org: string; project: string; flag: Flag }) {
  const queryClient = useQueryClient();
  const path = { org, project, flag: flag.key ?? flag.id };
  const [asking, setAsking] = useState(false);
  const [expiry, setExpiry] = useState(flag.expiresAtUtc?.slice(0, 10) ?? '');
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, path.flag) });
    void queryClient.invalidateQueries({ queryKey: queryKeys.flags(org, project) });
  };

  const archive = useFormMutation({
    mutationFn: (force: boolean) =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/archive', {
          params: { path, query: force ? { force } : {} },
        }),
      ),
    onSuccess: () => {
      setAsking(false);
      refresh();
    },
  });
  const restore = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/restore', {
          params: { path },
        }),
      ),
    onSuccess: refresh,
  });
  const saveExpiry = useFormMutation({
    mutationFn: () =>
      expiry
        ? unwrap(
            api.PATCH('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', {
              params: { path },
              body: { expiresAtUtc: new Date(`${expiry}T00:00:00Z`).toISOString() },
            }),
          )
        : unwrap(
            api.DELETE('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/expiry', {
              params: { path },
            }),
          ),
    onSuccess: refresh,
    messageAt: 'expiresAtUtc',
  });
  /** The refusals `force=true` overrides (flag archival; flag-cleanup contract, section 2). */
  const guard =
    archive.error instanceof ApiProblem &&
    (archive.error.code === 'FLAG_RECENTLY_EVALUATED' ||
      archive.error.code === 'FLAG_STILL_REFERENCED');

  return (
    <section aria-labelledby="lifecycle-heading">
      <h2 id="lifecycle-heading">Lifecycle</h2>
      <form className="row" onSubmit={saveExpiry.submit}>
        <Labelled
          label="Expires on"
          hint={flag.isExpired ? 'Expired: time to remove it from code.' : 'Empty: never expires.'}
          error={saveExpiry.problemAt('expiresAtUtc')}
        >
          {(id, describedBy) => (
            <TextField.Root
              id={id}
              type="date"
              aria-describedby={describedBy}
              aria-invalid={saveExpiry.problemAt('expiresAtUtc') !== undefined}
              value={expiry}
              onChange={(event) => setExpiry(event.target.value)}
            />
          )}
        </Labelled>
        <Button type="submit" variant="soft" color="gray" disabled={saveExpiry.isPending}>
          Save expiry
        </Button>
      </form>
      {flag.isArchived ? (
        <Button
          type="button"
          disabled={!flag._actions['restore']?.allowed || restore.isPending}
          onClick={() => restore.mutate()}
        >
          Restore flag
        </Button>
      ) : (
        <AlertDialog.Root
          open={asking}
          onOpenChange={(open) => {
            setAsking(open);
            archive.reset();
          }}
        >
          <AlertDialog.Trigger>
            <Button
              type="button"
              variant="soft"
              color="gray"
              disabled={!flag._actions['archive']?.allowed}
            >
              Archive flag
            </Button>
          </AlertDialog.Trigger>
          <AlertDialog.Content className="dialog-body">
            <AlertDialog.Title>Archive {flag.key}?</AlertDialog.Title>
            <AlertDialog.Description>
              SDKs stop receiving it: code that still asks for it gets its fallback value. Archived
              flags can be restored.
            </AlertDialog.Description>
            {archive.error && (
              <p role="alert" className="field-error">
                {archive.error.message}
              </p>
            )}
            <DialogActions
              alert
              keepOpen
              confirmLabel={guard ? 'Archive anyway' : 'Archive'}
              busy={archive.isPending}
              onConfirm={() => archive.mutate(guard)}
            />
          </AlertDialog.Content>
        </AlertDialog.Root>
      )}
      {restore.error && (
        <p role="alert" className="field-error">
          {restore.error.message}
        </p>
      )}
    </section>
  );
}
