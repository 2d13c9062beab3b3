import { useEffect } from 'react';
import { Link } from 'wouter';
import { useOrganization } from './organization';

/** Remembers the project a person was in, so organization pages keep it in the header. */
export function lastProjectKey(org: string): string {
  return `vexil.project.${org}`;
}

/**
 * The organization's pages in the header: Members for Admins, Settings for Owners (the
 * organization's `_actions`, so no one sees a link to a page they cannot use), and one's own
 * account for everyone.
 */
export function OrgNav(props: { org: string; project: string }) {
  const { org, project } = props;
  const organization = useOrganization(org);
  const can = (action: string) => organization.data?._actions[action]?.allowed === true;
  useEffect(() => sessionStorage.setItem(lastProjectKey(org), project), [org, project]);
  return (
    <>
      {can('manageMembers') && <Link href={`/orgs/${org}/members`}>Members</Link>}
      {can('update') && <Link href={`/orgs/${org}/settings`}>Settings</Link>}
      <Link href={`/orgs/${org}/account`}>Your account</Link>
    </>
  );
}
