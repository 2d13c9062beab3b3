import { COUNTED } from './change-requests/queries';
import { useOrganization } from './people/organization';

/** A console page a person may open: its name and address. */
export interface ConsolePage {
  label: string;
  path: string;
  /** A number shown beside the label, and what it counts ("to review"). */
  count?: { value: string; of: string } | undefined;
}

/**
 * The project's own pages: its flags, its change requests (with how many wait for the caller's
 * review, when any do), its experiments and metrics, and the removal candidates.
 */
export function projectPages(org: string, project: string, toReview = 0): ConsolePage[] {
  const base = `/orgs/${org}/projects/${project}`;
  return [
    { label: 'Flags', path: `${base}/flags` },
    {
      label: 'Change requests',
      path: `${base}/change-requests`,
      count:
        toReview > 0
          ? { value: toReview >= COUNTED ? `${COUNTED - 1}+` : String(toReview), of: 'to review' }
          : undefined,
    },
    { label: 'Experiments', path: `${base}/experiments` },
    { label: 'Metrics', path: `${base}/metrics` },
    { label: 'Removal candidates', path: `${base}/removal-candidates` },
  ];
}

/**
 * The Administer section's pages (journey 7): environments, segments and SDK keys for every
 * role; webhooks, relay keys and the audit log only when the organization's `_actions` allow them (Admin),
 * so a Viewer is offered no page it cannot use. One list for the navigation and the command bar.
 */
export function useAdministrationPages(org: string, project: string): ConsolePage[] {
  const actions = useOrganization(org).data?._actions;
  const base = `/orgs/${org}/projects/${project}`;
  return [
    { label: 'Environments', path: `${base}/environments` },
    { label: 'Segments', path: `${base}/segments` },
    { label: 'SDK keys', path: `${base}/sdk-keys` },
    ...(actions?.['manageWebhooks']?.allowed
      ? [{ label: 'Webhooks', path: `${base}/webhooks` }]
      : []),
    ...(actions?.['manageRelayKeys']?.allowed
      ? [{ label: 'Relay keys', path: `${base}/relay-keys` }]
      : []),
    ...(actions?.['readAuditLog']?.allowed
      ? [{ label: 'Audit log', path: `${base}/audit-log` }]
      : []),
  ];
}

/**
 * The organization's pages: Members for Admins, Settings for Owners (the organization's
 * `_actions`), and one's own account for everyone. One list for the header and the command bar.
 */
export function useOrganizationPages(org: string): ConsolePage[] {
  const actions = useOrganization(org).data?._actions;
  const can = (action: string) => actions?.[action]?.allowed === true;
  return [
    ...(can('manageMembers') ? [{ label: 'Members', path: `/orgs/${org}/members` }] : []),
    ...(can('update') ? [{ label: 'Settings', path: `/orgs/${org}/settings` }] : []),
    { label: 'Your account', path: `/orgs/${org}/account` },
  ];
}
