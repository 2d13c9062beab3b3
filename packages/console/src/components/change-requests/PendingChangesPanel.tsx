import { Button, Switch } from '@radix-ui/themes';
import { useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useLocation } from 'wouter';
import { api, unwrap } from '../../api/client';
import type { Environment, Flag, Segment } from '../../api/types';
import { Field, Labelled } from '../Field';
import { FormDialog } from '../FormDialog';
import { useFormMutation } from '../useFormMutation';
import { useTargetingWrites } from '../targeting/writes';
import { ApplyAtField } from './ApplyAtField';
import { documentOf } from './configuration';
import type { PendingChanges } from './pending';
import { changeRequestPath } from './paths';
import { utcOfLocal } from './when';
import { queryKeys } from '../../api/query-keys';

/**
 * The head of a protected environment's targeting (design record 043): the policy in words, the
 * on/off the request will set, the edits collected so far (discardable), and "Request review",
 * which opens a change request holding them instead of saving.
 */
export function PendingChangesPanel(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: Environment;
  stored: Omit<PendingChanges, 'edits'>;
  pending: PendingChanges | null;
  segments: Segment[];
  mayPropose: boolean;
  onDiscard: () => void;
}) {
  const { flag, environment, pending } = props;
  const writes = useTargetingWrites();
  const switchId = useId();
  const name = environment.name ?? environment.key ?? '';
  const { approvals } = environment.changeRequests;
  const enabled = (pending ?? props.stored).settings.isEnabled;
  return (
    <section className="pending" aria-labelledby={`${switchId}-heading`}>
      <h3 id={`${switchId}-heading`}>Pending changes in {name}</h3>
      <p className="hint">
        {name} requires a reviewed change request ({approvals}{' '}
        {approvals === 1 ? 'approval' : 'approvals'}): edits here are collected below, not saved.
        Nothing changes for SDKs until the request is approved and applied.
      </p>
      <div className="toggle">
        <Switch
          id={switchId}
          color="green"
          checked={enabled}
          disabled={!props.mayPropose}
          onCheckedChange={(next) => void writes.toggle(next)}
        />
        <label htmlFor={switchId}>On in {name} once applied</label>
      </div>
      {pending && pending.edits.length > 0 ? (
        <ol aria-label={`Pending changes in ${name}`} className="pending-edits">
          {pending.edits.map((edit, index) => (
            <li key={index}>{edit}</li>
          ))}
        </ol>
      ) : (
        <p className="hint">No pending changes.</p>
      )}
      {pending && pending.edits.length > 0 && (
        <div className="row">
          <Button type="button" variant="soft" color="gray" onClick={props.onDiscard}>
            Discard pending changes
          </Button>
          <RequestReview {...props} pending={pending} />
        </div>
      )}
      {pending && pending.baseRevision !== props.stored.baseRevision && (
        <p className="field-error">
          {flag.key} changed in {name} since these edits began: the request will show a conflict
          until it is rewritten from the current targeting.
        </p>
      )}
    </section>
  );
}

/** "Request review": title, description and an optional time, then the new request's page. */
function RequestReview(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: Environment;
  pending: PendingChanges;
  segments: Segment[];
  onDiscard: () => void;
}) {
  const { org, project, flag, environment, pending } = props;
  const [title, setTitle] = useState('');
  const [description, setDescription] = useState('');
  const [applyAt, setApplyAt] = useState('');
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const name = environment.name ?? environment.key ?? '';
  const open = useFormMutation({
    mutationFn: () => {
      const when = utcOfLocal(applyAt);
      return unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/change-requests', {
          params: { path: { org, project } },
          body: {
            environment: environment.key ?? environment.id,
            title: title.trim(),
            ...(description.trim() ? { description: description.trim() } : {}),
            changes: [
              {
                kind: 'flag',
                flagKey: flag.key ?? flag.id,
                baseRevision: pending.baseRevision,
                configuration: {
                  ...documentOf(pending.settings, pending.rules, flag, props.segments),
                },
              },
            ],
            ...(when ? { applyAt: when } : {}),
            submit: true,
          },
        }),
      );
    },
    onSuccess: (created) => {
      props.onDiscard();
      void queryClient.invalidateQueries({ queryKey: queryKeys.changeRequests(org, project) });
      navigate(changeRequestPath(org, project, created.number));
    },
  });
  return (
    <FormDialog
      label="Request review"
      title={`Request review of ${flag.key} in ${name}`}
      description={`The ${pending.edits.length} pending ${
        pending.edits.length === 1 ? 'change goes' : 'changes go'
      } to review as one change request; nothing is applied until it is approved.`}
      form={open}
      confirmLabel="Open change request"
      onOpen={() => {
        setTitle(title || `${flag.key}: ${pending.edits.join(', ').toLowerCase()}`.slice(0, 200));
      }}
    >
      <Field
        label="Title"
        value={title}
        onChange={(event) => setTitle(event.target.value)}
        error={open.problemAt('title')}
      />
      <Labelled
        label="Description"
        hint="Why, and what to watch after it is applied (Markdown)."
        error={open.problemAt('description')}
      >
        {(id, describedBy) => (
          <textarea
            id={id}
            aria-describedby={describedBy}
            rows={4}
            value={description}
            onChange={(event) => setDescription(event.target.value)}
          />
        )}
      </Labelled>
      <ApplyAtField
        value={applyAt}
        onChange={setApplyAt}
        hint="Optional: once approved, it is applied at this time; empty to apply by hand."
        error={open.problemAt('applyAt')}
      />
      {open.problemAt('changes') && (
        <p role="alert" className="field-error">
          {open.problemAt('changes')}
        </p>
      )}
    </FormDialog>
  );
}
