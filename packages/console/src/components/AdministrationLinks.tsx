import { Link } from 'wouter';
import { useAdministrationPages } from './pages';

/**
 * The Administer section's entries in the Shell's navigation (journey 7): the pages of
 * {@link useAdministrationPages}, so a Viewer sees no page it cannot use.
 */
export function AdministrationLinks({ org, project }: { org: string; project: string }) {
  return (
    <>
      {useAdministrationPages(org, project).map((page) => (
        <Link key={page.path} href={page.path}>
          {page.label}
        </Link>
      ))}
    </>
  );
}
