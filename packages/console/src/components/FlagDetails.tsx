import { Button, TextArea } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { queryKeys } from '../api/query-keys';
import type { Flag } from '../api/types';
import { Field, Labelled } from './Field';
import { useFormMutation } from './useFormMutation';

type Metadata = Flag['metadata'];

/** The form's text of a flag's fields (tags comma-separated, metadata as JSON). */
function draftOf(flag: Flag) {
  return {
    name: flag.name ?? '',
    description: flag.description ?? '',
    tags: flag.tags.join(', '),
    clientSideVisible: flag.clientSideVisible,
    isPermanent: flag.isPermanent,
    ownerId: flag.owner?.id ?? '',
    removalPrUrl: flag.removalPrUrl ?? '',
    metadata: Object.keys(flag.metadata).length > 0 ? JSON.stringify(flag.metadata, null, 2) : '',
  };
}

/** Why the metadata text is not a JSON object, or undefined when it is one (or empty). */
function metadataProblem(text: string): string | undefined {
  if (!text.trim()) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return undefined;
    return 'Must be a JSON object, such as {"team": "checkout"}.';
  } catch (error) {
    return `Not JSON: ${(error as Error).message}`;
  }
}

/**
 * "Details" of the flag's Settings: every field `PATCH …/flags/{flag}` changes (name,
 * description, tags, client-side visibility, permanent, owner, removal pull request, metadata;
 * the expiry is the lifecycle's), so nothing the API can change needs a token (issue 43). Only
 * the fields the person changed are sent; the API's messages appear at their fields.
 */
export function FlagDetails({ org, project, flag }: { org: string; project: string; flag: Flag }) {
  const queryClient = useQueryClient();
  const path = { org, project, flag: flag.key ?? flag.id };
  // What was last read or saved: only the fields the person changed since are sent, so a change
  // someone else made meanwhile (the page is live) is not written back over.
  const [before, setBefore] = useState(() => draftOf(flag));
  const [draft, setDraft] = useState(before);
  // Read when the owner list is first used: the section stays within its requests (record 038).
  const [choosingOwner, setChoosingOwner] = useState(false);
  const members = useQuery({
    queryKey: queryKeys.members(org),
    enabled: choosingOwner,
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/members', { params: { path: { org }, query: {} } })),
  });
  const typedProblem = metadataProblem(draft.metadata);
  const tags = draft.tags
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);

  const save = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', {
          params: { path },
          body: {
            ...(draft.name !== before.name ? { name: draft.name.trim() || null } : {}),
            ...(draft.description !== before.description
              ? { description: draft.description.trim() }
              : {}),
            ...(draft.tags !== before.tags ? { tags } : {}),
            ...(draft.clientSideVisible !== before.clientSideVisible
              ? { clientSideVisible: draft.clientSideVisible }
              : {}),
            ...(draft.isPermanent !== before.isPermanent ? { isPermanent: draft.isPermanent } : {}),
            ...(draft.ownerId !== before.ownerId ? { ownerId: draft.ownerId || null } : {}),
            ...(draft.removalPrUrl !== before.removalPrUrl
              ? { removalPrUrl: draft.removalPrUrl.trim() || null }
              : {}),
            ...(draft.metadata !== before.metadata
              ? { metadata: (draft.metadata.trim() ? JSON.parse(draft.metadata) : {}) as Metadata }
              : {}),
          },
        }),
      ),
    onSuccess: (saved) => {
      setBefore(draftOf(saved));
      setDraft(draftOf(saved));
      void queryClient.invalidateQueries({ queryKey: queryKeys.flag(org, project, path.flag) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.flags(org, project) });
    },
  });
  const allowed = flag._actions['update']?.allowed ?? false;
  const ownerChoices = members.data?.items ?? [];

  return (
    <section aria-labelledby="details-heading">
      <h2 id="details-heading">Details</h2>
      <form onSubmit={(event) => (typedProblem ? event.preventDefault() : save.submit(event))}>
        <Field
          label="Name"
          value={draft.name}
          onChange={(event) => setDraft({ ...draft, name: event.target.value })}
          error={save.problemAt('name')}
        />
        <Field
          label="Description"
          value={draft.description}
          onChange={(event) => setDraft({ ...draft, description: event.target.value })}
          error={save.problemAt('description')}
        />
        <Field
          label="Tags"
          value={draft.tags}
          autoComplete="off"
          onChange={(event) => setDraft({ ...draft, tags: event.target.value })}
          hint="Separated by commas, such as checkout, experiment."
          error={save.problemAt('tags')}
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
          Client keys (browsers, mobile apps) see only the flags visible to them; server keys see
          every flag.
        </p>
        <label className="check">
          <input
            type="checkbox"
            checked={draft.isPermanent}
            onChange={(event) => setDraft({ ...draft, isPermanent: event.target.checked })}
          />
          Permanent (an operational switch, never a removal candidate)
        </label>
        <Labelled label="Owner" error={save.problemAt('ownerId')}>
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={draft.ownerId}
              onFocus={() => setChoosingOwner(true)}
              onPointerDown={() => setChoosingOwner(true)}
              onChange={(event) => setDraft({ ...draft, ownerId: event.target.value })}
            >
              <option value="">No owner</option>
              {flag.owner && !ownerChoices.some((m) => m.userId === flag.owner?.id) && (
                <option value={flag.owner.id}>{flag.owner.name ?? flag.owner.email}</option>
              )}
              {ownerChoices.map((member) => (
                <option key={member.userId} value={member.userId}>
                  {member.name ?? member.email}
                </option>
              ))}
            </select>
          )}
        </Labelled>
        <Field
          label="Removal pull request"
          inputMode="url"
          value={draft.removalPrUrl}
          placeholder="https://…"
          onChange={(event) => setDraft({ ...draft, removalPrUrl: event.target.value })}
          error={save.problemAt('removalPrUrl')}
        />
        <Labelled
          label="Metadata (JSON)"
          hint="Served to SDKs with the flag: strings, numbers and Booleans by name."
          error={typedProblem ?? save.problemAt('metadata')}
        >
          {(id, describedBy) => (
            <TextArea
              id={id}
              aria-describedby={describedBy}
              aria-invalid={typedProblem !== undefined || save.problemAt('metadata') !== undefined}
              value={draft.metadata}
              onChange={(event) => setDraft({ ...draft, metadata: event.target.value })}
            />
          )}
        </Labelled>
        {save.message && (
          <p role="alert" className="field-error">
            {save.message}
          </p>
        )}
        <div className="actions">
          <Button type="submit" disabled={!allowed || save.isPending}>
            Save details
          </Button>
          {save.isSuccess && <span role="status">Saved.</span>}
        </div>
      </form>
    </section>
  );
}
