import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import { Field } from './Field';
import { keyFromName } from './key-from-name';
import { useFormMutation } from './useFormMutation';

/**
 * An organization's first project, right after the first run: the API gives it a `development`
 * and a `production` environment, and the console opens its flag list.
 */
export function FirstProjectForm(props: { org: string }) {
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [key, setKey] = useState<string | null>(null);
  const projectKey = key ?? keyFromName(name);
  const create = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects', {
          params: { path: { org: props.org } },
          body: { key: projectKey, name },
        }),
      ),
    onSuccess: async (project) => {
      await queryClient.invalidateQueries();
      navigate(`/orgs/${props.org}/projects/${project.key}/flags`);
    },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;
  return (
    <main className="sign-in">
      <h1>Create your first project</h1>
      <p>
        A project holds the flags of one product or service, with a development and a production
        environment to start with.
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Field
          label="Project name"
          required
          value={name}
          error={problem?.field('name')}
          onChange={(event) => setName(event.target.value)}
        />
        <Field
          label="Project key"
          hint="Its short name in addresses and SDK code."
          required
          value={projectKey}
          error={problem?.field('key')}
          onChange={(event) => setKey(event.target.value)}
        />
        {create.error && !problem?.field('name') && !problem?.field('key') && (
          <p role="alert">{create.error.message}</p>
        )}
        <button type="submit" disabled={create.isPending}>
          Create project
        </button>
      </form>
    </main>
  );
}
