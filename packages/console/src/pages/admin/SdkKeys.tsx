import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { SdkKey } from '../../api/types';
import { ActionsTableHead } from '../../components/ActionsTableHead';
import { Field } from '../../components/Field';
import { FormDialog } from '../../components/FormDialog';
import { CreatedKey, RevokeKey } from '../../components/KeyActions';
import { usePlace } from '../../components/Shell';
import { useFormMutation } from '../../components/useFormMutation';
import { useResourceActions } from '../../components/useResourceActions';
import { queryKeys } from '../../api/query-keys';

/**
 * Journey 7, SDK keys of the environment chosen in the header: create (the key is shown once,
 * with a copy button), revoke, and when each was last used.
 */
export function SdkKeys({ org, project }: { org: string; project: string }) {
  const place = usePlace();
  const env = place.environment;
  const environment = place.environments.find((e) => e.key === env);
  const keys = useQuery({
    queryKey: queryKeys.sdkKeys(org, project, env),
    enabled: env !== null,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys', {
          params: { path: { org, project, env: env ?? '' }, query: { limit: 200 } },
        }),
      ),
  });
  const items = keys.data?.items ?? [];
  const name = environment?.name ?? env ?? '';
  return (
    <>
      <div className="page-heading">
        <h1>SDK keys in {name}</h1>
        {env && keys.data?._actions['create']?.allowed && (
          <CreateSdkKey org={org} project={project} env={env} environmentName={name} />
        )}
      </div>
      <p className="hint">
        Server keys (<code>vxl_srv_…</code>) download the whole configuration. Client keys (
        <code>vxl_cli_…</code>) see only the flags visible to client-side SDKs (a flag&apos;s
        Settings, &ldquo;Visible to client-side SDKs&rdquo;); any other flag answers as missing.
        Choose another environment in the navigation.
      </p>
      {keys.error && <p role="alert">{keys.error.message}</p>}
      <table>
        <ActionsTableHead columns={['Name', 'Type', 'Key', 'Created', 'Last used']} />
        <tbody>
          {items.map((key) => (
            <SdkKeyRow key={key.id} org={org} project={project} env={env ?? ''} sdkKey={key} />
          ))}
        </tbody>
      </table>
      {keys.isSuccess && items.length === 0 && <p>No SDK key in {name} yet.</p>}
    </>
  );
}

function when(instant: string | null): React.ReactNode {
  return instant ? <time dateTime={instant}>{new Date(instant).toLocaleString()}</time> : 'Never';
}

function SdkKeyRow(props: { org: string; project: string; env: string; sdkKey: SdkKey }) {
  const { org, project, env, sdkKey } = props;
  const path = { org, project, env, keyId: sdkKey.id };
  const queryClient = useQueryClient();
  const can = useResourceActions(queryKeys.sdkKeyActions(org, project, env, sdkKey.id), () =>
    unwrap(
      api.GET('/api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys/{keyId}', {
        params: { path },
      }),
    ),
  );
  const revoke = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys/{keyId}', {
          params: { path },
        }),
      ),
    onSuccess: () =>
      queryClient.invalidateQueries({ queryKey: queryKeys.sdkKeys(org, project, env) }),
  });
  return (
    <tr>
      <th scope="row">{sdkKey.name}</th>
      <td>{sdkKey.type === 'ServerSide' ? 'Server' : 'Client'}</td>
      <td>
        <code>…{sdkKey.lastFourCharacters}</code>
      </td>
      <td>{when(sdkKey.createdAt)}</td>
      <td>{when(sdkKey.lastUsedAt)}</td>
      <td>
        {can('revoke').allowed && (
          <RevokeKey
            name={sdkKey.name}
            what={sdkKey.name}
            consequence={`SDKs using the key ending in ${sdkKey.lastFourCharacters} are refused from now on.`}
            revoke={revoke}
          />
        )}
      </td>
    </tr>
  );
}

function CreateSdkKey(props: {
  org: string;
  project: string;
  env: string;
  environmentName: string;
}) {
  const { org, project, env } = props;
  const [name, setName] = useState('');
  const [type, setType] = useState<'ServerSide' | 'ClientSide'>('ServerSide');
  const queryClient = useQueryClient();
  const create = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys', {
          params: { path: { org, project, env } },
          body: { name: name.trim(), type },
        }),
      ),
    onSuccess: () =>
      queryClient.invalidateQueries({ queryKey: queryKeys.sdkKeys(org, project, env) }),
  });
  return (
    <FormDialog
      label="New SDK key"
      title={`New SDK key in ${props.environmentName}`}
      description="The key is shown once, here; only a hash is stored."
      form={create}
      confirmLabel="Create key"
      onOpen={() => setName('')}
      result={(created) => (
        <CreatedKey
          label={`SDK key ${created.name}`}
          secret={created.key}
          warning={created.warning}
        />
      )}
    >
      <Field
        label="Name"
        required
        value={name}
        onChange={(event) => setName(event.target.value)}
        hint="Where the key is used, e.g. checkout-service."
        error={create.problemAt('name')}
      />
      <fieldset>
        <legend>Type</legend>
        <label className="check">
          <input
            type="radio"
            name="sdk-key-type"
            checked={type === 'ServerSide'}
            onChange={() => setType('ServerSide')}
          />
          Server: downloads every flag and evaluates locally
        </label>
        <label className="check">
          <input
            type="radio"
            name="sdk-key-type"
            checked={type === 'ClientSide'}
            onChange={() => setType('ClientSide')}
          />
          Client: evaluates client-visible flags, safe in a browser or app
        </label>
        {create.problemAt('type') && <p className="field-error">{create.problemAt('type')}</p>}
      </fieldset>
    </FormDialog>
  );
}
