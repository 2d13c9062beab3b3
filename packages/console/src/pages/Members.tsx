import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Button, Dialog } from '@radix-ui/themes';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { ROLES, type Member, type Role } from '../api/types';
import { ActionsTableHead } from '../components/ActionsTableHead';
import { ConfirmButton } from '../components/ConfirmButton';
import { DialogActions } from '../components/DialogActions';
import { Field, Labelled } from '../components/Field';
import { NotAllowed } from '../components/people/NotAllowed';
import { LastUsed } from '../components/LastUsed';
import { useOrganization, when } from '../components/people/organization';
import { ProjectAllowlist, ProjectNames } from '../components/people/ProjectAllowlist';
import { SecretOnce } from '../components/SecretOnce';
import { useFormMutation } from '../components/useFormMutation';
import { queryKeys } from '../api/query-keys';

/**
 * Members, invitations and service tokens of an organization (console.md journey 7), for Admins
 * and Owners; every control follows the row's `_actions`.
 */
export function Members(props: { org: string }) {
  const organization = useOrganization(props.org);
  if (organization.isPending) return <p role="status">Loading…</p>;
  if (organization.isError) return <p role="alert">{organization.error.message}</p>;
  const manage = organization.data._actions['manageMembers'];
  if (!manage?.allowed)
    return <NotAllowed page="Members" reason={manage?.reason ?? 'requires the Admin role'} />;
  return (
    <>
      <div className="page-heading">
        <h1>Members</h1>
      </div>
      <MemberList org={props.org} />
      <Invitations org={props.org} />
      <ServiceTokens org={props.org} />
    </>
  );
}

function MemberList({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const members = useQuery({
    queryKey: queryKeys.members(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/members', { params: { path: { org }, query: { limit: 200 } } }),
      ),
  });
  const [problem, setProblem] = useState<{ userId: string; message: string } | null>(null);
  const update = useFormMutation({
    mutationFn: (change: { userId: string; role?: Role; projectIds?: string[] | null }) =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}/members/{userId}', {
          params: { path: { org, userId: change.userId } },
          body: {
            ...(change.role ? { role: change.role } : {}),
            ...(change.projectIds !== undefined ? { projectIds: change.projectIds } : {}),
          },
        }),
      ),
    onMutate: () => setProblem(null),
    onError: (error, change) => setProblem({ userId: change.userId, message: error.message }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: queryKeys.members(org) }),
  });
  const remove = useFormMutation({
    mutationFn: (userId: string) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/members/{userId}', { params: { path: { org, userId } } }),
      ),
    onMutate: () => setProblem(null),
    onError: (error, userId) => setProblem({ userId, message: error.message }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: queryKeys.members(org) }),
  });
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">People</h2>
      <table>
        <ActionsTableHead columns={['Person', 'Role', 'Projects', 'Last seen']} />
        <tbody>
          {(members.data?.items ?? []).map((member) => {
            const canUpdate = member._actions['update']?.allowed ?? false;
            const who = member.name ? `${member.name} (${member.email})` : member.email;
            return (
              <tr key={member.userId}>
                <td>
                  {who}
                  {problem?.userId === member.userId && (
                    <p className="field-error" role="alert">
                      {problem.message}
                    </p>
                  )}
                </td>
                <td>
                  {canUpdate ? (
                    <select
                      aria-label={`Role of ${member.email}`}
                      value={member.role}
                      onChange={(event) =>
                        update.mutate({
                          userId: member.userId,
                          role: event.target.value as Role,
                        })
                      }
                    >
                      {ROLES.map((role) => (
                        <option key={role}>{role}</option>
                      ))}
                    </select>
                  ) : (
                    member.role
                  )}
                </td>
                <td>
                  <ProjectNames org={org} ids={member.projectIds} />
                  {canUpdate && (
                    <ProjectsDialog
                      org={org}
                      member={member}
                      onSave={(projectIds) => update.mutate({ userId: member.userId, projectIds })}
                    />
                  )}
                </td>
                <td>
                  <LastUsed at={member.lastSeenAt} />
                </td>
                <td>
                  {member._actions['delete']?.allowed && (
                    <ConfirmButton
                      label="Remove"
                      ariaLabel={`Remove ${member.email}`}
                      title={`Remove ${member.email} from ${org}?`}
                      description="Their sessions and tokens stop working for this organization at once."
                      confirm="Remove member"
                      onConfirm={() => remove.mutate(member.userId)}
                    />
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

function ProjectsDialog(props: {
  org: string;
  member: Member;
  onSave: (projectIds: string[] | null) => void;
}) {
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState<string[] | null>(props.member.projectIds);
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        setOpen(next);
        setDraft(props.member.projectIds);
      }}
    >
      <Dialog.Trigger>
        <Button
          type="button"
          variant="soft"
          color="gray"
          aria-label={`Change projects of ${props.member.email}`}
        >
          Change
        </Button>
      </Dialog.Trigger>
      <Dialog.Content className="dialog-body">
        <Dialog.Title>Projects of {props.member.email}</Dialog.Title>
        <Dialog.Description className="hint">
          Other projects answer as if they did not exist.
        </Dialog.Description>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            props.onSave(draft);
            setOpen(false);
          }}
        >
          <ProjectAllowlist org={props.org} legend="Projects" value={draft} onChange={setDraft} />
          {/* An empty allowlist would shut the member out of every project: not savable. */}
          <DialogActions confirmLabel="Save projects" busy={draft !== null && draft.length === 0} />
        </form>
      </Dialog.Content>
    </Dialog.Root>
  );
}

function Invitations({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('Member');
  const [projectIds, setProjectIds] = useState<string[] | null>(null);
  const invitations = useQuery({
    queryKey: queryKeys.invitations(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/invitations', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
  const refresh = () =>
    void queryClient.invalidateQueries({ queryKey: queryKeys.invitations(org) });
  const invite = useFormMutation({
    messageAt: 'email',
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/invitations', {
          params: { path: { org } },
          body: { email: email.trim(), role, ...(projectIds ? { projectIds } : {}) },
        }),
      ),
    onSuccess: () => {
      setEmail('');
      setProjectIds(null);
      refresh();
    },
  });
  const revoke = useFormMutation({
    mutationFn: (id: string) =>
      unwrap(api.DELETE('/api/v1/orgs/{org}/invitations/{id}', { params: { path: { org, id } } })),
    onSettled: refresh,
  });
  const items = invitations.data?.items ?? [];
  const sent = invite.data;
  return (
    <section aria-labelledby="invitations-heading">
      <h2 id="invitations-heading">Invitations</h2>
      {invitations.data?._actions['create']?.allowed && (
        <form aria-label="Invite someone" onSubmit={invite.submit}>
          <div className="row">
            <Field
              label="E-mail to invite"
              type="email"
              required
              value={email}
              error={invite.problemAt('email')}
              onChange={(event) => setEmail(event.target.value)}
            />
            <RoleField
              label="Role"
              value={role}
              error={invite.problemAt('role')}
              onChange={setRole}
            />
          </div>
          <ProjectAllowlist
            org={org}
            legend="Projects they may see"
            value={projectIds}
            error={invite.problemAt('projectIds')}
            onChange={setProjectIds}
          />
          <Button
            type="submit"
            disabled={invite.isPending || (projectIds !== null && projectIds.length === 0)}
          >
            Invite
          </Button>
        </form>
      )}
      {sent && (
        <SecretOnce
          label={`Invitation link for ${sent.email}`}
          secret={sent.acceptUrl}
          warning={
            sent.emailed
              ? `It was also e-mailed to ${sent.email}. It works once, for that address, and is not shown again.`
              : `This server sends no e-mail: hand the link to ${sent.email} yourself. It works once, for that address, and is not shown again.`
          }
        />
      )}
      {revoke.error && <p className="field-error">{revoke.error.message}</p>}
      {items.length === 0 ? (
        <p className="hint">No pending invitations.</p>
      ) : (
        <table>
          <ActionsTableHead columns={['E-mail', 'Role', 'Projects', 'Expires']} />
          <tbody>
            {items.map((invitation) => (
              <tr key={invitation.id}>
                <td>{invitation.email}</td>
                <td>{invitation.role}</td>
                <td>
                  <ProjectNames org={org} ids={invitation.projectIds} />
                </td>
                <td>{when(invitation.expiresAt)}</td>
                <td>
                  {invitation._actions['delete']?.allowed && (
                    <ConfirmButton
                      label="Revoke"
                      ariaLabel={`Revoke invitation of ${invitation.email}`}
                      title={`Revoke the invitation of ${invitation.email}?`}
                      description="The link stops working."
                      confirm="Revoke invitation"
                      onConfirm={() => revoke.mutate(invitation.id)}
                    />
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

function ServiceTokens({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const organization = useOrganization(org);
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('Viewer');
  const tokens = useQuery({
    queryKey: queryKeys.serviceTokens(org),
    enabled: organization.data?._actions['manageServiceTokens']?.allowed === true,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/service-tokens', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
  const refresh = () =>
    void queryClient.invalidateQueries({ queryKey: queryKeys.serviceTokens(org) });
  const create = useFormMutation({
    messageAt: 'name',
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/service-tokens', {
          params: { path: { org } },
          body: { name: name.trim(), role },
        }),
      ),
    onSuccess: () => {
      setName('');
      refresh();
    },
  });
  const revoke = useFormMutation({
    mutationFn: (tokenId: string) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/service-tokens/{tokenId}', {
          params: { path: { org, tokenId } },
        }),
      ),
    onSettled: refresh,
  });
  if (!organization.data?._actions['manageServiceTokens']?.allowed) return null;
  const items = tokens.data?.items ?? [];
  return (
    <section aria-labelledby="service-tokens-heading">
      <h2 id="service-tokens-heading">Service tokens</h2>
      <p className="hint">Tokens that belong to the organization rather than to a person.</p>
      <form className="row" aria-label="New service token" onSubmit={create.submit}>
        <Field
          label="Service token name"
          required
          value={name}
          error={create.problemAt('name')}
          onChange={(event) => setName(event.target.value)}
        />
        <RoleField
          label="Service token role"
          value={role}
          error={create.problemAt('role')}
          onChange={setRole}
        />
        <Button type="submit" disabled={create.isPending}>
          Create service token
        </Button>
      </form>
      {create.data && (
        <SecretOnce
          label={`Service token ${create.data.name}`}
          secret={create.data.token}
          warning="Copy it now: Vexil keeps only its hash and will not show it again."
        />
      )}
      {revoke.error && <p className="field-error">{revoke.error.message}</p>}
      {items.length > 0 && (
        <table>
          <ActionsTableHead columns={['Name', 'Role', 'Ends in', 'Last used']} />
          <tbody>
            {items.map((token) => (
              <tr key={token.id}>
                <td>{token.name}</td>
                <td>{token.role}</td>
                <td>
                  <code>…{token.lastFourCharacters}</code>
                </td>
                <td>
                  <LastUsed at={token.lastUsedAt} />
                </td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke service token ${token.name}`}
                    title={`Revoke service token ${token.name}?`}
                    description="Whatever uses it is refused from its next request."
                    confirm="Revoke token"
                    onConfirm={() => revoke.mutate(token.id)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** A role to give (an invitation's, a service token's), with the API's message about it. */
function RoleField(props: {
  label: string;
  value: Role;
  error: string | undefined;
  onChange: (role: Role) => void;
}) {
  return (
    <Labelled label={props.label} error={props.error}>
      {(id, describedBy) => (
        <select
          id={id}
          aria-describedby={describedBy}
          value={props.value}
          onChange={(event) => props.onChange(event.target.value as Role)}
        >
          {ROLES.map((role) => (
            <option key={role}>{role}</option>
          ))}
        </select>
      )}
    </Labelled>
  );
}
