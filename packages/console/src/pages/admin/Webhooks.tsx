import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../../api/client';
import type { Webhook } from '../../api/types';
import { Field } from '../../components/Field';
import { FormDialog } from '../../components/FormDialog';
import { SecretOnce } from '../../components/SecretOnce';
import { useFormMutation } from '../../components/useFormMutation';
import { WebhookFilters, type FilterDraft } from './WebhookFilters';
import { queryKeys } from '../../api/query-keys';

/** Journey 7, webhooks: the organization's subscriptions and "New webhook" (Admin). */
export function Webhooks({ org, project }: { org: string; project: string }) {
  const webhooks = useQuery({
    queryKey: queryKeys.webhooks(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/webhooks', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
  const items = webhooks.data?.items ?? [];
  const create = webhooks.data?._actions['create'];
  return (
    <>
      <div className="page-heading">
        <h1>Webhooks</h1>
        {create?.allowed && <WebhookDialog org={org} project={project} />}
      </div>
      <p className="hint">
        Each subscription receives the organization&apos;s changes as signed HTTP POST requests,
        retried on failure.
        {create && !create.allowed && create.reason ? ` ${create.reason}` : ''}
      </p>
      {webhooks.error && <p role="alert">{webhooks.error.message}</p>}
      <table>
        <thead>
          <tr>
            <th scope="col">Webhook</th>
            <th scope="col">URL</th>
            <th scope="col">Status</th>
            <th scope="col">Failures in a row</th>
          </tr>
        </thead>
        <tbody>
          {items.map((webhook) => (
            <tr key={webhook.id}>
              <th scope="row">
                <Link href={`/orgs/${org}/projects/${project}/webhooks/${webhook.id}`}>
                  {webhook.name}
                </Link>
              </th>
              <td>
                <code>{webhook.url}</code>
              </td>
              <td>
                <WebhookStatus webhook={webhook} />
              </td>
              <td>{webhook.consecutiveFailures}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {webhooks.isSuccess && items.length === 0 && <p>No webhook subscription yet.</p>}
    </>
  );
}

/** "Enabled", or "Disabled" with the reason the service gave. */
export function WebhookStatus({
  webhook,
}: {
  webhook: Pick<Webhook, 'enabled' | 'disabledReason'>;
}) {
  if (webhook.enabled) return <span>Enabled</span>;
  return (
    <span>
      <span className="badge">Disabled</span>
      {webhook.disabledReason ? ` — ${webhook.disabledReason}` : ''}
    </span>
  );
}

/** "New webhook" or "Edit": name, URL and filters; a new one's secret is shown once. */
export function WebhookDialog(props: { org: string; project: string; webhook?: Webhook }) {
  const { org, project, webhook } = props;
  const initial = () => ({
    name: webhook?.name ?? '',
    url: webhook?.url ?? '',
    filters: {
      eventTypes: webhook?.eventTypes ?? [],
      projectIds: webhook?.projectIds ?? [],
      environmentIds: webhook?.environmentIds ?? [],
    } satisfies FilterDraft,
  });
  const [draft, setDraft] = useState(initial);
  const queryClient = useQueryClient();
  const save = useFormMutation({
    mutationFn: async () => {
      const body = { name: draft.name.trim(), url: draft.url.trim(), ...draft.filters };
      if (webhook) {
        await unwrap(
          api.PATCH('/api/v1/orgs/{org}/webhooks/{id}', {
            params: { path: { org, id: webhook.id } },
            body,
          }),
        );
        return null;
      }
      return unwrap(api.POST('/api/v1/orgs/{org}/webhooks', { params: { path: { org } }, body }));
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.webhooks(org) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.webhook(org) });
    },
  });
  return (
    <FormDialog
      label={webhook ? 'Edit webhook' : 'New webhook'}
      title={webhook ? `Edit ${webhook.name}` : 'New webhook'}
      description={
        <>
          Deliveries are signed with every active secret of the subscription (Standard Webhooks,
          header <code>webhook-signature</code>).
        </>
      }
      wide
      form={save}
      confirmLabel={webhook ? 'Save webhook' : 'Create webhook'}
      onOpen={() => setDraft(initial())}
      result={(created) =>
        created && (
          <>
            <SecretOnce label="Signing secret" secret={created.secret} warning={created.warning} />
            <div className="actions">
              <Link
                href={`/orgs/${org}/projects/${project}/webhooks/${created.id}`}
                className="button"
              >
                Open webhook
              </Link>
            </div>
          </>
        )
      }
    >
      <Field
        label="Name"
        required
        value={draft.name}
        onChange={(event) => setDraft({ ...draft, name: event.target.value })}
        error={save.problemAt('name')}
      />
      <Field
        label="URL"
        required
        type="url"
        value={draft.url}
        placeholder="https://hooks.example.com/vexil"
        onChange={(event) => setDraft({ ...draft, url: event.target.value })}
        error={save.problemAt('url')}
      />
      <WebhookFilters
        org={org}
        value={draft.filters}
        onChange={(filters) => setDraft({ ...draft, filters })}
        problemAt={save.problemAt}
      />
    </FormDialog>
  );
}
