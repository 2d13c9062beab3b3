import { Button } from '@radix-ui/themes';
import { useQuery } from '@tanstack/react-query';
import { Command } from 'cmdk';
import { useEffect, useState } from 'react';
import { useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { projectPages, useAdministrationPages, useOrganizationPages } from './pages';
import { queryKeys } from '../api/query-keys';

/**
 * The command bar (Ctrl/⌘-K, journey 2): jumps to any flag or segment of the project (searched
 * by the API) or to any page the person may use (the same lists as the navigation, so a page
 * hidden there by `_actions` is not offered here either). `cmdk` gives the combobox, its
 * keyboard handling and the dialog.
 */
export function CommandBar({ org, project }: { org: string; project: string }) {
  const [open, setOpen] = useState(false);
  const [search, setSearch] = useState('');
  const [, navigate] = useLocation();
  const base = `/orgs/${org}/projects/${project}`;

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key.toLowerCase() === 'k' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        setOpen((was) => !was);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const flags = useQuery({
    queryKey: queryKeys.commandBarFlags(org, project, search.trim()),
    enabled: open,
    refetchInterval: false,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags', {
          params: {
            path: { org, project },
            query: { limit: 8, ...(search.trim() ? { q: search.trim() } : {}) },
          },
        }),
      ),
  });
  const segments = useQuery({
    queryKey: queryKeys.commandBarSegments(org, project, search.trim()),
    enabled: open,
    refetchInterval: false,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/segments', {
          params: {
            path: { org, project },
            query: { limit: 8, ...(search.trim() ? { q: search.trim() } : {}) },
          },
        }),
      ),
  });
  const pages = [
    ...projectPages(org, project),
    ...useAdministrationPages(org, project),
    ...useOrganizationPages(org),
  ].filter((page) => page.label.toLowerCase().includes(search.trim().toLowerCase()));

  function go(path: string) {
    setOpen(false);
    setSearch('');
    navigate(path);
  }

  return (
    <>
      <Button type="button" variant="soft" color="gray" onClick={() => setOpen(true)}>
        Go to… <kbd>Ctrl K</kbd>
      </Button>
      <Command.Dialog
        open={open}
        onOpenChange={setOpen}
        label="Go to a flag, segment or page"
        shouldFilter={false}
        overlayClassName="overlay"
        contentClassName="dialog command"
      >
        <Command.Input
          value={search}
          onValueChange={setSearch}
          placeholder="Flag or segment key or name, or a page"
          aria-label="Go to"
        />
        <Command.List>
          <Command.Empty>Nothing matches.</Command.Empty>
          {(flags.data?.items.length ?? 0) > 0 && (
            <Command.Group heading="Flags">
              {flags.data?.items.map((flag) => (
                <Command.Item
                  key={flag.id}
                  value={`flag:${flag.key}`}
                  onSelect={() => go(`${base}/flags/${flag.key}`)}
                >
                  {flag.name ?? flag.key} <code className="hint">{flag.key}</code>
                </Command.Item>
              ))}
            </Command.Group>
          )}
          {(segments.data?.items.length ?? 0) > 0 && (
            <Command.Group heading="Segments">
              {segments.data?.items.map((segment) => (
                <Command.Item
                  key={segment.id}
                  value={`segment:${segment.key}`}
                  onSelect={() => go(`${base}/segments/${segment.key}`)}
                >
                  {segment.name ?? segment.key} <code className="hint">{segment.key}</code>
                </Command.Item>
              ))}
            </Command.Group>
          )}
          {pages.length > 0 && (
            <Command.Group heading="Pages">
              {pages.map((page) => (
                <Command.Item
                  key={page.path}
                  value={`page:${page.path}`}
                  onSelect={() => go(page.path)}
                >
                  {page.label}
                </Command.Item>
              ))}
            </Command.Group>
          )}
        </Command.List>
      </Command.Dialog>
    </>
  );
}
