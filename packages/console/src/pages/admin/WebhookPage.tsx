import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { AlertDialog, Button } from '@radix-ui/themes';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../../api/client';
import type { Delivery } from '../../api/types';
import { ActionsTableHead } from '../../components/ActionsTableHead';
import { DialogActions } from '../../components/DialogActions';
import { SecretOnce } from '../../components/SecretOnce';
import { WebhookDialog, WebhookStatus } from './Webhooks';
import { queryKeys } from '../../api/query-keys';
import { useFormMutation } from '../../components/useFormMutation';

/**
 * One webhook subscription: its filters, enable/disable (with the reason when the service
 * disabled it), signing secrets (rotate: the new one shown once, both active until the old is
 * retired), a test event, and the delivery log with each attempt and redelivery.
 */
export function WebhookPage(props: { org: string; project: string; id: string }) {
  const { org, project, id } = props;
  const path = { org, id };
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const webhook = useQuery({
    queryKey: queryKeys.webhook(org, id),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/webhooks/{id}', { params: { path } })),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: queryKeys.webhook(org, id) });
  const setEnabled = useFormMutation({
    mutationFn: (enabled: boolean) =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}/webhooks/{id}', { params: { path }, body: { enabled } }),
      ),
    onSettled: refresh,
  });
  const test = useFormMutation({
    mutationFn: () =>
      unwrap(api.POST('/api/v1/orgs/{org}/webhooks/{id}/test', { params: { path } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.deliveries(org, id) }),
  });
  const remove = useFormMutation({
    mutationFn: () => unwrap(api.DELETE('/api/v1/orgs/{org}/webhooks/{id}', { params: { path } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.webhooks(org) });
      navigate(`/orgs/${org}/projects/${project}/webhooks`);
    },
  });
  const projects = useQuery({
    queryKey: queryKeys.projects(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
  const projectName = (projectId: string) =>
    projects.data?.items.find((p) => p.id === projectId)?.name ?? projectId;
  if (webhook.error) return <p role="alert">{webhook.error.message}</p>;
  if (!webhook.data) return <p role="status">Loading…</p>;
  const data = webhook.data;
  const can = (action: string) => data._actions[action] ?? { allowed: false, reason: null };
  const problem = setEnabled.error ?? test.error ?? remove.error;
  return (
    <>
      <p>
        <Link href={`/orgs/${org}/projects/${project}/webhooks`}>Webhooks</Link>
      </p>
      <div className="page-heading">
        <h1>{data.name}</h1>
        {can('update').allowed && <WebhookDialog org={org} project={project} webhook={data} />}
        {can('update').allowed && (
          <Button
            type="button"
            variant="soft"
            color="gray"
            disabled={setEnabled.isPending}
            onClick={() => setEnabled.mutate(!data.enabled)}
          >
            {data.enabled ? 'Disable' : 'Enable'}
          </Button>
        )}
        {can('test').allowed ? (
          <Button type="button" disabled={test.isPending} onClick={() => test.mutate()}>
            Send test event
          </Button>
        ) : null}
        {can('delete').allowed && (
          <AlertDialog.Root>
            <AlertDialog.Trigger>
              <Button type="button" variant="soft" color="gray">
                Delete webhook
              </Button>
            </AlertDialog.Trigger>
            <AlertDialog.Content className="dialog-body">
              <AlertDialog.Title>Delete {data.name}?</AlertDialog.Title>
              <AlertDialog.Description>
                Its secrets and delivery log go with it.
              </AlertDialog.Description>
              <DialogActions
                alert
                danger
                confirmLabel={`Delete ${data.name}`}
                busy={remove.isPending}
                onConfirm={() => remove.mutate()}
              />
            </AlertDialog.Content>
          </AlertDialog.Root>
        )}
      </div>
      {problem && (
        <p role="alert" className="field-error">
          {problem.message}
        </p>
      )}
      {test.data && <p role="status">Test event queued; its delivery appears below.</p>}
      <dl className="facts">
        <dt>URL</dt>
        <dd>
          <code>{data.url}</code>
        </dd>
        <dt>Status</dt>
        <dd>
          <WebhookStatus webhook={data} />
          {!can('test').allowed && can('test').reason && (
            <span className="hint"> (test events: {can('test').reason})</span>
          )}
        </dd>
        <dt>Event types</dt>
        <dd>{data.eventTypes.length ? data.eventTypes.join(', ') : 'All'}</dd>
        <dt>Projects</dt>
        <dd>{data.projectIds.length ? data.projectIds.map(projectName).join(', ') : 'All'}</dd>
        <dt>Environments</dt>
        <dd>{data.environmentIds.length ? `${data.environmentIds.length} chosen` : 'All'}</dd>
        <dt>Failures in a row</dt>
        <dd>{data.consecutiveFailures}</dd>
      </dl>
      <Secrets
        org={org}
        id={id}
        secrets={data.secrets}
        canAdd={can('addSecret').allowed}
        onChange={refresh}
      />
      <Deliveries org={org} id={id} />
    </>
  );
}

function Secrets(props: {
  org: string;
  id: string;
  secrets: { id: string; createdAt: string }[];
  canAdd: boolean;
  onChange: () => Promise<void>;
}) {
  const { org, id } = props;
  const [retireError, setRetireError] = useState<string | null>(null);
  const rotate = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/webhooks/{id}/secrets', { params: { path: { org, id } } }),
      ),
    onSettled: props.onChange,
  });
  const retire = useFormMutation({
    mutationFn: (secretId: string) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/webhooks/{id}/secrets/{secretId}', {
          params: { path: { org, id, secretId } },
        }),
      ),
    onMutate: () => setRetireError(null),
    onError: (error) => setRetireError(error.message),
    onSettled: props.onChange,
  });
  const count = props.secrets.length;
  return (
    <section aria-labelledby="secrets-heading">
      <h2 id="secrets-heading">Signing secrets</h2>
      <p className="hint">
        {count} active {count === 1 ? 'secret' : 'secrets'}: every delivery is signed with each of
        them. To rotate, add a new secret, move the receiver to it, then retire the old one.
      </p>
      {props.canAdd && (
        <Button type="button" disabled={rotate.isPending} onClick={() => rotate.mutate()}>
          Rotate secret
        </Button>
      )}
      {rotate.error && (
        <p role="alert" className="field-error">
          {rotate.error.message}
        </p>
      )}
      {rotate.data && (
        <SecretOnce
          label="New signing secret"
          secret={rotate.data.secret}
          warning={rotate.data.warning}
        />
      )}
      {retireError && (
        <p role="alert" className="field-error">
          {retireError}
        </p>
      )}
      <table>
        <caption className="visually-hidden">Active signing secrets</caption>
        <ActionsTableHead columns={['Secret', 'Added']} />
        <tbody>
          {props.secrets.map((secret, index) => {
            const label = `Secret ${index + 1}${secret.id === rotate.data?.secretId ? ' (new)' : ''}`;
            return (
              <tr key={secret.id}>
                <th scope="row">
                  {label} <code className="hint">{secret.id.slice(-8)}</code>
                </th>
                <td>
                  <time dateTime={secret.createdAt}>
                    {new Date(secret.createdAt).toLocaleString()}
                  </time>
                </td>
                <td>
                  {props.canAdd && (
                    <Button
                      type="button"
                      variant="soft"
                      color="gray"
                      aria-label={`Retire secret ${index + 1}`}
                      disabled={retire.isPending}
                      onClick={() => retire.mutate(secret.id)}
                    >
                      Retire
                    </Button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

function Deliveries({ org, id }: { org: string; id: string }) {
  const deliveries = useQuery({
    queryKey: queryKeys.deliveries(org, id),
    // Attempts are the delivery worker's, not management changes, so the event stream does not
    // carry them: the log is read again every second while a delivery is under way, else every 5 s.
    refetchInterval: (query) =>
      query.state.data?.items.some((delivery) => delivery.status === 'Pending') ? 1_000 : 5_000,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/webhooks/{id}/deliveries', {
          params: { path: { org, id }, query: { limit: 50 } },
        }),
      ),
  });
  const items = deliveries.data?.items ?? [];
  return (
    <section aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries</h2>
      {deliveries.error && <p role="alert">{deliveries.error.message}</p>}
      {deliveries.isSuccess && items.length === 0 && <p>No delivery yet.</p>}
      <ol className="deliveries">
        {items.map((delivery) => (
          <DeliveryEntry key={delivery.id} org={org} id={id} delivery={delivery} />
        ))}
      </ol>
    </section>
  );
}

/** One delivery: status, its attempts (status code, latency, error) and "Redeliver". */
function DeliveryEntry(props: { org: string; id: string; delivery: Delivery }) {
  const { org, id, delivery } = props;
  const path = { org, id, deliveryId: delivery.id };
  const queryClient = useQueryClient();
  const detail = useQuery({
    // Read again only when the log shows the delivery changed (a new attempt, a new status).
    queryKey: queryKeys.delivery(org, id, delivery.id, delivery.attemptCount, delivery.status),
    refetchInterval: false,
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}', { params: { path } }),
      ),
  });
  const redeliver = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}/redeliver', {
          params: { path },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.deliveries(org, id) }),
  });
  const attempts = detail.data?.attempts ?? [];
  const created = new Date(delivery.createdAt).toLocaleString();
  const label = `${delivery.eventType} delivery of ${created}`;
  return (
    <li aria-label={label}>
      <p>
        <strong>{delivery.status === 'DeadLettered' ? 'Dead-lettered' : delivery.status}</strong>{' '}
        <code>{delivery.eventType}</code>{' '}
        <span className="hint">
          created {created}, {delivery.attemptCount}{' '}
          {delivery.attemptCount === 1 ? 'attempt' : 'attempts'}
          {delivery.status === 'Pending' && delivery.attemptCount > 0
            ? `, next at ${new Date(delivery.nextAttemptAt).toLocaleTimeString()}`
            : ''}
        </span>{' '}
        <Button
          type="button"
          variant="soft"
          color="gray"
          disabled={redeliver.isPending}
          onClick={() => redeliver.mutate()}
        >
          Redeliver
        </Button>
      </p>
      {redeliver.error && (
        <p role="alert" className="field-error">
          Not redelivered: {redeliver.error.message}
        </p>
      )}
      {detail.data && (
        <details className="payload">
          <summary>Payload</summary>
          <pre tabIndex={0} aria-label={`Payload of ${label}`}>
            {JSON.stringify(detail.data.payload, null, 2)}
          </pre>
        </details>
      )}
      {attempts.length > 0 && (
        <table className="attempts">
          <caption className="visually-hidden">Attempts of this delivery</caption>
          <thead>
            <tr>
              <th scope="col">Attempt</th>
              <th scope="col">At</th>
              <th scope="col">Status code</th>
              <th scope="col">Latency</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((attempt) => (
              <tr key={`${attempt.attemptNumber}-${attempt.attemptedAt}`}>
                <th scope="row">{attempt.attemptNumber}</th>
                <td>
                  <time dateTime={attempt.attemptedAt}>
                    {new Date(attempt.attemptedAt).toLocaleTimeString()}
                  </time>
                </td>
                <td>{attempt.responseStatusCode ?? '—'}</td>
                <td>{attempt.durationMs} ms</td>
                <td>{attempt.error ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </li>
  );
}
