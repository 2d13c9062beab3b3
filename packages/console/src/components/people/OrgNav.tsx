import { useEffect } from 'react';
import { Link } from 'wouter';
import { useOrganizationPages } from '../pages';

/** Remembers the project a person was in, so organization pages keep it in the header. */
export function lastProjectKey(org: string): string {
  return `vexil.project.${org}`;
}

/**
 * The organization's pages in the header ({@link useOrganizationPages}: no one sees a link to a
 * page they cannot use), and one's own account for everyone.
 */
export function OrgNav(props: { org: string; project: string }) {
  const { org, project } = props;
  const pages = useOrganizationPages(org);
  useEffect(() => sessionStorage.setItem(lastProjectKey(org), project), [org, project]);
  return (
    <>
      {pages.map((page) => (
        <Link key={page.path} href={page.path}>
          {page.label}
        </Link>
      ))}
    </>
  );
}
