import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../../api/client';
import type { Segment } from '../../api/types';
import { ConfirmButton } from '../../components/ConfirmButton';
import { KeyNameFields } from '../../components/KeyNameFields';
import { describeCondition } from '../../components/targeting/sentence';
import { FormDialog } from '../../components/FormDialog';
import {
  ConditionGroupEditor,
  conditionsOfDraft,
  draftConditions,
  emptyCondition,
  type DraftGroup,
} from '../../components/targeting/ConditionGroup';
import { useFormMutation } from '../../components/useFormMutation';
import { useSegments } from '../../api/segments';
import { queryKeys } from '../../api/query-keys';

/** Journey 7, segments: the project's user segments and "New segment". */
export function Segments({ org, project }: { org: string; project: string }) {
  const segments = useSegments(org, project);
  const items = segments.data?.items ?? [];
  return (
    <>
      <div className="page-heading">
        <h1>Segments</h1>
        {segments.data?._actions['create']?.allowed && (
          <SegmentDialog org={org} project={project} />
        )}
      </div>
      <p className="hint">
        A segment names a group of contexts by conditions; targeting rules in any environment can
        refer to it.
      </p>
      {segments.error && <p role="alert">{segments.error.message}</p>}
      <table>
        <thead>
          <tr>
            <th scope="col">Segment</th>
            <th scope="col">Key</th>
            <th scope="col">Matches when</th>
          </tr>
        </thead>
        <tbody>
          {items.map((segment) => (
            <tr key={segment.id}>
              <th scope="row">
                <Link href={`/orgs/${org}/projects/${project}/segments/${segment.key}`}>
                  {segment.name ?? segment.key}
                </Link>
              </th>
              <td>
                <code>{segment.key}</code>
              </td>
              <td>
                <ConditionSummary segment={segment} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {segments.isSuccess && items.length === 0 && <p>No segment yet.</p>}
    </>
  );
}

/** The conditions in words: "country is one of NL or BE and plan is pro". */
function ConditionSummary({ segment }: { segment: Segment }) {
  if (segment.conditions.length === 0) return <span className="hint">every context</span>;
  const joiner = segment.conditionLogic === 'And' ? ' and ' : ' or ';
  return <span>{segment.conditions.map(describeCondition).join(joiner)}</span>;
}

/** One segment: its conditions, where it is used, and Edit / Delete as `_actions` allow. */
export function SegmentPage(props: { org: string; project: string; segment: string }) {
  const { org, project } = props;
  const path = { org, project, segment: props.segment };
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const segment = useQuery({
    queryKey: queryKeys.segment(org, project, props.segment),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/segments/{segment}', { params: { path } }),
      ),
  });
  const usage = useQuery({
    queryKey: queryKeys.segmentUsage(org, project, props.segment),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/segments/{segment}/usage', {
          params: { path },
        }),
      ),
  });
  const remove = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/segments/{segment}', {
          params: { path },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.segments(org, project) });
      navigate(`/orgs/${org}/projects/${project}/segments`);
    },
  });
  if (segment.error) return <p role="alert">{segment.error.message}</p>;
  if (!segment.data) return <p role="status">Loading…</p>;
  const data = segment.data;
  const name = data.name ?? data.key;
  const users = usage.data?.items ?? [];
  return (
    <>
      <p>
        <Link href={`/orgs/${org}/projects/${project}/segments`}>Segments</Link>
      </p>
      <div className="page-heading">
        <h1>{name}</h1>
        {data._actions['update']?.allowed && (
          <SegmentDialog org={org} project={project} segment={data} />
        )}
        {data._actions['delete']?.allowed && (
          <ConfirmButton
            label="Delete segment"
            title={`Delete ${name}?`}
            description="A segment still used by a rule is not deleted: the rules are named instead."
            confirm={`Delete ${name}`}
            busy={remove.isPending}
            onConfirm={() => remove.mutate()}
          />
        )}
      </div>
      {remove.error && (
        <p role="alert" className="field-error">
          Not deleted: {remove.error.message}
        </p>
      )}
      {data.description && <p>{data.description}</p>}
      <p>
        <code>{data.key}</code> matches when <ConditionSummary segment={data} />.
      </p>
      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading">Where this segment is used</h2>
        {usage.error && <p role="alert">{usage.error.message}</p>}
        {usage.isSuccess && users.length === 0 && <p>No targeting rule refers to it.</p>}
        <ul>
          {users.map((user) => (
            <li key={user.ruleId}>
              <Link href={`/orgs/${org}/projects/${project}/flags/${user.flagKey}`}>
                {user.flagName ?? user.flagKey}
              </Link>{' '}
              in {user.environmentName ?? user.environmentKey}, rule {user.rulePosition}
              {user.ruleDescription ? `: ${user.ruleDescription}` : ''}
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

interface Draft {
  key: string;
  name: string;
  description: string;
  group: DraftGroup;
}

function draftOf(segment: Segment | undefined): Draft {
  return {
    key: segment?.key ?? '',
    name: segment?.name ?? '',
    description: segment?.description ?? '',
    group: {
      operator: segment?.conditionLogic ?? 'And',
      conditions: segment ? draftConditions(segment.conditions) : [emptyCondition()],
    },
  };
}

/** "New segment" or "Edit segment", with the condition editor targeting rules use. */
function SegmentDialog(props: { org: string; project: string; segment?: Segment }) {
  const { org, project, segment } = props;
  const [draft, setDraft] = useState(() => draftOf(segment));
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const save = useFormMutation({
    mutationFn: () => {
      const body = {
        key: draft.key.trim(),
        name: draft.name.trim() || null,
        description: draft.description.trim() || null,
        conditions: conditionsOfDraft(draft.group.conditions),
        conditionLogic: draft.group.operator,
      };
      return segment
        ? unwrap(
            api.PATCH('/api/v1/orgs/{org}/projects/{project}/segments/{segment}', {
              params: { path: { org, project, segment: segment.id } },
              body,
            }),
          )
        : unwrap(
            api.POST('/api/v1/orgs/{org}/projects/{project}/segments', {
              params: { path: { org, project } },
              body,
            }),
          );
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.segments(org, project) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.segment(org, project) });
      if (segment && saved.key !== segment.key)
        navigate(`/orgs/${org}/projects/${project}/segments/${saved.key}`, { replace: true });
    },
  });
  return (
    <FormDialog
      label={segment ? 'Edit segment' : 'New segment'}
      title={segment ? `Edit ${segment.name ?? segment.key}` : 'New segment'}
      description="A context is in the segment when the conditions match; rules using it change at once in every environment."
      wide
      form={save}
      confirmLabel={segment ? 'Save segment' : 'Create segment'}
      onOpen={() => setDraft(draftOf(segment))}
    >
      <KeyNameFields
        draft={draft}
        onChange={setDraft}
        problemAt={save.problemAt}
        keyFromName={!segment}
      />
      <fieldset className="group">
        <legend>Conditions</legend>
        <ConditionGroupEditor
          group={draft.group}
          onChange={(group) => setDraft({ ...draft, group })}
          path="conditions"
          operatorLabel="The segment matches when"
          conditionLabel={(c) => `Condition ${c + 1}`}
          addLabel="Add condition"
          problemAt={save.problemAt}
        />
      </fieldset>
    </FormDialog>
  );
}
