import { Button } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { Organization, SsoConnection } from '../api/types';
import { ActionsTableHead } from '../components/ActionsTableHead';
import { ConfirmButton } from '../components/ConfirmButton';
import { Field, Labelled } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { NotAllowed } from '../components/people/NotAllowed';
import { useOrganization } from '../components/people/organization';
import { useFormMutation } from '../components/useFormMutation';
import { queryKeys } from '../api/query-keys';

const PLANS = ['Solo', 'Team', 'Pro', 'Business', 'Enterprise'] as const;
const SSO_ROLES = ['Viewer', 'Member', 'Admin'] as const;

/**
 * The organization's settings (plan, single sign-on required) and its OpenID Connect
 * connections (console.md journey 7). Both are the Owner's: the API says so in `_actions`.
 */
export function OrgSettings(props: { org: string }) {
  const organization = useOrganization(props.org);
  // Held here: the form below starts afresh whenever the organization changes, a save included.
  const [saved, setSaved] = useState(false);
  if (organization.isPending) return <p role="status">Loading…</p>;
  if (organization.isError) return <p role="alert">{organization.error.message}</p>;
  const update = organization.data._actions['update'];
  if (!update?.allowed)
    return <NotAllowed page="Settings" reason={update?.reason ?? 'requires the Owner role'} />;
  return (
    <>
      <div className="page-heading">
        <h1>Settings</h1>
      </div>
      <OrganizationForm
        key={JSON.stringify([
          organization.data.name,
          organization.data.plan,
          organization.data.ssoRequired,
          organization.data.ssoConnectionId,
        ])}
        organization={organization.data}
        saved={saved}
        onSaved={setSaved}
      />
      <SsoConnections org={props.org} />
    </>
  );
}

function useConnections(org: string) {
  return useQuery({
    queryKey: queryKeys.ssoConnections(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/sso-connections', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
}

function OrganizationForm({
  organization,
  saved,
  onSaved,
}: {
  organization: Organization;
  saved: boolean;
  onSaved: (saved: boolean) => void;
}) {
  const org = organization.slug;
  const queryClient = useQueryClient();
  const connections = useConnections(org).data?.items ?? [];
  const [name, setName] = useState(organization.name);
  const [plan, setPlan] = useState(organization.plan);
  const [ssoRequired, setSsoRequired] = useState(organization.ssoRequired);
  const [connectionId, setConnectionId] = useState(organization.ssoConnectionId ?? '');
  const save = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}', {
          params: { path: { org } },
          body: { name: name.trim(), plan, ssoRequired, ssoConnectionId: connectionId || null },
        }),
      ),
    onMutate: () => onSaved(false),
    onSuccess: () => {
      onSaved(true);
      void queryClient.invalidateQueries({ queryKey: queryKeys.org(org) });
    },
  });
  const ssoRequiredProblem = save.problemAt('ssoRequired');
  return (
    <section aria-labelledby="organization-heading">
      <h2 id="organization-heading">Organization</h2>
      <form onSubmit={save.submit}>
        <Field
          label="Organization name"
          required
          value={name}
          error={save.problemAt('name')}
          onChange={(event) => setName(event.target.value)}
        />
        <Labelled label="Plan" error={save.problemAt('plan')}>
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={plan}
              onChange={(event) => setPlan(event.target.value as Organization['plan'])}
            >
              {PLANS.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled
          label="Single sign-on connection"
          hint="People who sign in with SSO use this connection."
          error={save.problemAt('ssoConnectionId')}
        >
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={connectionId}
              onChange={(event) => setConnectionId(event.target.value)}
            >
              <option value="">None</option>
              {connections.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
          )}
        </Labelled>
        <label className="check">
          <input
            type="checkbox"
            checked={ssoRequired}
            aria-describedby="sso-required-hint"
            onChange={(event) => setSsoRequired(event.target.checked)}
          />
          Require single sign-on
        </label>
        <p id="sso-required-hint" className={ssoRequiredProblem ? 'field-error' : 'hint'}>
          {ssoRequiredProblem ??
            'Passwords and other tokens of members stop working here; Owners and service tokens stay exempt.'}
        </p>
        {save.message && (
          <p className="field-error" role="alert">
            {save.message}
          </p>
        )}
        <Button type="submit" disabled={save.isPending}>
          Save settings
        </Button>
        {saved && <span role="status"> Saved.</span>}
      </form>
    </section>
  );
}

function SsoConnections({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const connections = useConnections(org);
  const remove = useFormMutation({
    mutationFn: (id: string) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/sso-connections/{id}', { params: { path: { org, id } } }),
      ),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.ssoConnections(org) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.org(org) });
    },
  });
  const items = connections.data?.items ?? [];
  return (
    <section aria-labelledby="sso-heading">
      <h2 id="sso-heading">Single sign-on connections</h2>
      <p className="hint">
        OpenID Connect providers (Keycloak, Entra ID, Google…). Register Vexil there with the
        callback address shown, then add the connection here.
      </p>
      {connections.data?._actions['create']?.allowed && <ConnectionDialog org={org} />}
      {remove.error && (
        <p className="field-error" role="alert">
          {remove.error.message}
        </p>
      )}
      {items.length > 0 && (
        <table>
          <ActionsTableHead columns={['Name', 'Issuer', 'New people', 'Callback address']} />
          <tbody>
            {items.map((connection) => (
              <tr key={connection.id}>
                <td>
                  {connection.name}
                  {!connection.enabled && <span className="badge">Disabled</span>}
                </td>
                <td>
                  <code>{connection.issuer}</code>
                </td>
                <td>
                  {connection.autoCreateUsers
                    ? `Join as ${connection.defaultRole}`
                    : 'Invitation needed'}
                  {connection.allowedDomains.length > 0 &&
                    ` (${connection.allowedDomains.join(', ')})`}
                </td>
                <td>
                  <code>{connection.callbackUrl}</code>
                </td>
                <td className="row">
                  {connection._actions['update']?.allowed && (
                    <ConnectionDialog org={org} connection={connection} />
                  )}
                  {connection._actions['delete'] && (
                    <ConfirmButton
                      label="Delete"
                      ariaLabel={`Delete connection ${connection.name}`}
                      title={`Delete the connection ${connection.name}?`}
                      description="Sessions that came through it end."
                      confirm="Delete connection"
                      disabled={!connection._actions['delete'].allowed}
                      onConfirm={() => remove.mutate(connection.id)}
                    />
                  )}
                  {connection._actions['delete'] && !connection._actions['delete'].allowed && (
                    <p className="hint">Cannot delete: {connection._actions['delete'].reason}.</p>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Creates a connection, or edits one (the client secret is write-only: empty keeps it). */
function ConnectionDialog(props: { org: string; connection?: SsoConnection }) {
  const { org, connection } = props;
  const queryClient = useQueryClient();
  const initial = () => ({
    name: connection?.name ?? '',
    issuer: connection?.issuer ?? '',
    clientId: connection?.clientId ?? '',
    clientSecret: '',
    allowedDomains: connection?.allowedDomains.join(', ') ?? '',
    defaultRole: (connection?.defaultRole ?? 'Viewer') as (typeof SSO_ROLES)[number],
    autoCreateUsers: connection?.autoCreateUsers ?? false,
    enabled: connection?.enabled ?? true,
  });
  const [draft, setDraft] = useState(initial);
  const set = <K extends keyof typeof draft>(key: K, value: (typeof draft)[K]) =>
    setDraft({ ...draft, [key]: value });
  const save = useFormMutation({
    mutationFn: () => {
      const body = {
        name: draft.name.trim(),
        issuer: draft.issuer.trim(),
        clientId: draft.clientId.trim(),
        allowedDomains: draft.allowedDomains
          .split(',')
          .map((d) => d.trim())
          .filter((d) => d !== ''),
        defaultRole: draft.defaultRole,
        autoCreateUsers: draft.autoCreateUsers,
        enabled: draft.enabled,
      };
      return connection
        ? unwrap(
            api.PATCH('/api/v1/orgs/{org}/sso-connections/{id}', {
              params: { path: { org, id: connection.id } },
              body: {
                ...body,
                ...(draft.clientSecret ? { clientSecret: draft.clientSecret } : {}),
              },
            }),
          )
        : unwrap(
            api.POST('/api/v1/orgs/{org}/sso-connections', {
              params: { path: { org } },
              body: { ...body, clientSecret: draft.clientSecret },
            }),
          );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.ssoConnections(org) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.org(org) });
    },
  });
  return (
    <FormDialog
      label={connection ? 'Edit' : 'New SSO connection'}
      ariaLabel={connection ? `Edit connection ${connection.name}` : undefined}
      quiet={connection !== undefined}
      title={connection ? `Edit ${connection.name}` : 'New SSO connection'}
      description="Vexil checks the issuer's discovery document before saving."
      wide
      form={save}
      confirmLabel={connection ? 'Save connection' : 'Create connection'}
      onOpen={() => setDraft(initial())}
    >
      <Field
        label="Connection name"
        required
        value={draft.name}
        error={save.problemAt('name')}
        onChange={(event) => set('name', event.target.value)}
      />
      <Field
        label="Issuer"
        required
        placeholder="https://idp.example.com/realms/acme"
        hint="An https:// address; Vexil reads its discovery document before saving."
        value={draft.issuer}
        error={save.problemAt('issuer')}
        onChange={(event) => set('issuer', event.target.value)}
      />
      <Field
        label="Client ID"
        required
        value={draft.clientId}
        error={save.problemAt('clientId')}
        onChange={(event) => set('clientId', event.target.value)}
      />
      <Field
        label="Client secret"
        type="password"
        autoComplete="off"
        required={!connection}
        hint={connection ? 'Empty: keep the current secret.' : undefined}
        value={draft.clientSecret}
        error={save.problemAt('clientSecret')}
        onChange={(event) => set('clientSecret', event.target.value)}
      />
      <Field
        label="Allowed e-mail domains"
        hint="Comma-separated; empty: any address the provider vouches for."
        value={draft.allowedDomains}
        error={save.problemAt('allowedDomains')}
        onChange={(event) => set('allowedDomains', event.target.value)}
      />
      <label className="check">
        <input
          type="checkbox"
          checked={draft.autoCreateUsers}
          onChange={(event) => set('autoCreateUsers', event.target.checked)}
        />
        Add people who are not members yet on their first sign-in
      </label>
      <Labelled label="Their role" error={save.problemAt('defaultRole')}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={draft.defaultRole}
            onChange={(event) =>
              set('defaultRole', event.target.value as (typeof SSO_ROLES)[number])
            }
          >
            {SSO_ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        )}
      </Labelled>
      <label className="check">
        <input
          type="checkbox"
          checked={draft.enabled}
          onChange={(event) => set('enabled', event.target.checked)}
        />
        Enabled
      </label>
    </FormDialog>
  );
}
