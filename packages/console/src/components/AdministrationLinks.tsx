import { Link } from 'wouter';
import { useOrganization } from './people/organization';

/**
 * The Administer section's entries in the Shell's navigation (journey 7): environments,
 * segments and SDK keys for every role; webhooks and the audit log only when the
 * organization's `_actions` allow them (Admin), so a Viewer sees no page it cannot use.
 */
export function AdministrationLinks({ org, project }: { org: string; project: string }) {
  const actions = useOrganization(org).data?._actions;
  const base = `/orgs/${org}/projects/${project}`;
  return (
    <>
      <Link href={`${base}/environments`}>Environments</Link>
      <Link href={`${base}/segments`}>Segments</Link>
      <Link href={`${base}/sdk-keys`}>SDK keys</Link>
      {actions?.['manageWebhooks']?.allowed && <Link href={`${base}/webhooks`}>Webhooks</Link>}
      {actions?.['readAuditLog']?.allowed && <Link href={`${base}/audit-log`}>Audit log</Link>}
    </>
  );
}
