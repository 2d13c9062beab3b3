import { Shell } from '../Shell';
import { lastProjectKey, useProjects } from './organization';

/**
 * The signed-in frame for organization pages (members, settings, one's account): the frame
 * keeps the project the person came from, else the first one.
 */
export function OrgShell(props: { org: string; children: React.ReactNode }) {
  const projects = useProjects(props.org);
  if (projects.isPending) return <p role="status">Loading…</p>;
  const items = projects.data?.items ?? [];
  const remembered = sessionStorage.getItem(lastProjectKey(props.org));
  const project = items.find((p) => p.key === remembered)?.key ?? items[0]?.key;
  if (!project) return <main className="page">{props.children}</main>;
  return (
    <Shell org={props.org} project={project}>
      {props.children}
    </Shell>
  );
}
