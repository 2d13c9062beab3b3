import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { RelayKey } from '../../api/types';
import { ActionsTableHead } from '../../components/ActionsTableHead';
import { Field } from '../../components/Field';
import { FormDialog } from '../../components/FormDialog';
import { CreatedKey, RevokeKey } from '../../components/KeyActions';
import { usePlace } from '../../components/Shell';
import { useFormMutation } from '../../components/useFormMutation';
import { queryKeys } from '../../api/query-keys';

/**
 * Relay keys of the organization (Admin; design record 045): a relay (`vexil relay`) follows this
 * Vexil with one. Create with a name and a scope (the organization, or the current project,
 * optionally narrowed to some of its environments); the `vxr_…` secret is shown once; revoke.
 */
export function RelayKeys({ org, project }: { org: string; project: string }) {
  const keys = useQuery({
    queryKey: queryKeys.relayKeys(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/relay-keys', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
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
  const projectKeys = new Map((projects.data?.items ?? []).map((p) => [p.id, p.key]));
  const current = projects.data?.items.find((p) => p.key === project);
  const items = keys.data?.items ?? [];
  return (
    <>
      <div className="page-heading">
        <h1>Relay keys</h1>
        {current && <CreateRelayKey org={org} project={current} />}
      </div>
      <p className="hint">
        A relay (<code>vexil relay</code>) follows this Vexil with a relay key (<code>vxr_…</code>)
        and serves the evaluation API near your applications. A key reads only the configurations
        and SDK key hashes of the environments it covers.
      </p>
      {keys.error && <p role="alert">{keys.error.message}</p>}
      <table>
        <ActionsTableHead columns={['Name', 'Covers', 'Key', 'Created']} />
        <tbody>
          {items.map((key) => (
            <RelayKeyRow key={key.id} org={org} relayKey={key} projectKeys={projectKeys} />
          ))}
        </tbody>
      </table>
      {keys.isSuccess && items.length === 0 && <p>No relay key yet.</p>}
    </>
  );
}

/** "Every project", or the project keys, with the environment keys when narrowed. */
function coverage(key: RelayKey, projectKeys: ReadonlyMap<string, string>): string {
  const projects = key.projectIds
    ? key.projectIds.map((id) => projectKeys.get(id) ?? id).join(', ')
    : 'Every project';
  return key.environmentKeys ? `${projects}: ${key.environmentKeys.join(', ')}` : projects;
}

function RelayKeyRow(props: {
  org: string;
  relayKey: RelayKey;
  projectKeys: ReadonlyMap<string, string>;
}) {
  const { org, relayKey } = props;
  const queryClient = useQueryClient();
  const revoke = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/relay-keys/{relayKeyId}', {
          params: { path: { org, relayKeyId: relayKey.id } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.relayKeys(org) }),
  });
  return (
    <tr>
      <th scope="row">{relayKey.name}</th>
      <td>{coverage(relayKey, props.projectKeys)}</td>
      <td>
        <code>…{relayKey.lastFourCharacters}</code>
      </td>
      <td>
        <time dateTime={relayKey.createdAt}>{new Date(relayKey.createdAt).toLocaleString()}</time>
      </td>
      <td>
        <RevokeKey
          name={relayKey.name}
          what={`relay key ${relayKey.name}`}
          consequence={`Relays using the key ending in ${relayKey.lastFourCharacters} are disconnected within a second; they keep serving what they hold.`}
          revoke={revoke}
        />
      </td>
    </tr>
  );
}

function CreateRelayKey(props: { org: string; project: { id: string; key: string } }) {
  const { org, project } = props;
  const place = usePlace();
  const [name, setName] = useState('');
  const [scope, setScope] = useState<'organization' | 'project'>('organization');
  const [environments, setEnvironments] = useState<string[]>([]);
  const queryClient = useQueryClient();
  const create = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/relay-keys', {
          params: { path: { org } },
          body: {
            name: name.trim(),
            ...(scope === 'project' ? { projectIds: [project.id] } : {}),
            ...(scope === 'project' && environments.length > 0
              ? { environmentKeys: environments }
              : {}),
          },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.relayKeys(org) }),
  });
  const toggleEnvironment = (key: string, on: boolean) =>
    setEnvironments((chosen) => (on ? [...chosen, key] : chosen.filter((k) => k !== key)));
  return (
    <FormDialog
      label="New relay key"
      title="New relay key"
      description="The key is shown once, here; only a hash is stored."
      form={create}
      confirmLabel="Create key"
      onOpen={() => {
        setName('');
        setScope('organization');
        setEnvironments([]);
      }}
      result={(created) => (
        <CreatedKey
          label={`Relay key ${created.name}`}
          secret={created.key}
          warning={created.warning}
        >
          <p className="hint">
            Start a relay with <code>VEXIL_RELAY_KEY=… npx vexil relay --upstream …</code>.
          </p>
        </CreatedKey>
      )}
    >
      <Field
        label="Name"
        required
        value={name}
        onChange={(event) => setName(event.target.value)}
        hint="Where the relay runs, e.g. eu-west or the factory network."
        error={create.problemAt('name')}
      />
      <fieldset>
        <legend>Covers</legend>
        <label className="check">
          <input
            type="radio"
            name="relay-key-scope"
            checked={scope === 'organization'}
            onChange={() => setScope('organization')}
          />
          Every project of the organization
        </label>
        <label className="check">
          <input
            type="radio"
            name="relay-key-scope"
            checked={scope === 'project'}
            onChange={() => setScope('project')}
          />
          Only the project {project.key}
        </label>
        {create.problemAt('projectIds') && (
          <p className="field-error">{create.problemAt('projectIds')}</p>
        )}
      </fieldset>
      {scope === 'project' && (
        <fieldset>
          <legend>Environments (none chosen: all of them)</legend>
          {place.environments.map(({ key, name }) =>
            key === null ? null : (
              <label className="check" key={key}>
                <input
                  type="checkbox"
                  checked={environments.includes(key)}
                  onChange={(event) => toggleEnvironment(key, event.target.checked)}
                />
                {name ?? key}
              </label>
            ),
          )}
        </fieldset>
      )}
    </FormDialog>
  );
}
