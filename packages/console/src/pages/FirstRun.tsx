import { Button } from '@radix-ui/themes';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../api/client';
import { forgetToken } from '../api/token';
import { Field } from '../components/Field';
import { KeyNameFields } from '../components/KeyNameFields';
import { useFormMutation } from '../components/useFormMutation';

/**
 * The first run (design record 040): on an instance without an organization, the setup code
 * printed by `vexil serve` creates the first organization and its Owner, who is then signed in.
 */
export function FirstRun(props: { onSignedIn: () => void }) {
  const [form, setForm] = useState({
    setupCode: '',
    orgName: '',
    email: '',
    name: '',
    password: '',
  });
  const [slug, setSlug] = useState('');
  const setUp = useFormMutation({
    mutationFn: async () => {
      forgetToken();
      await unwrap(api.POST('/auth/setup', { body: { ...form, orgSlug: slug } }));
    },
    onSuccess: props.onSignedIn,
  });
  const problem = setUp.error instanceof ApiProblem ? setUp.error : null;
  const field = (name: keyof typeof form | 'orgSlug') => problem?.field(name);
  const unplaced =
    setUp.error && !Object.keys(problem?.fields ?? {}).length ? setUp.error.message : null;
  const edit = (name: keyof typeof form) => (event: React.ChangeEvent<HTMLInputElement>) =>
    setForm({ ...form, [name]: event.target.value });

  return (
    <main className="sign-in">
      <h1>Set up Vexil</h1>
      <p>
        This instance has no organization yet. Create the first one and its Owner: you will be
        signed in as that Owner, and can invite everyone else from there.
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setUp.mutate();
        }}
      >
        <Field
          label="Setup code"
          hint="Printed by vexil serve when it started (XXXX-XXXX-XXXX)."
          autoComplete="off"
          required
          value={form.setupCode}
          error={field('setupCode')}
          onChange={edit('setupCode')}
        />
        <KeyNameFields
          noun="Organization"
          keyFromName
          keyHint="Its short name in addresses (/orgs/acme)."
          draft={{ name: form.orgName, key: slug }}
          onChange={(organization) => {
            setForm({ ...form, orgName: organization.name });
            setSlug(organization.key);
          }}
          problemAt={(name) => field(name === 'key' ? 'orgSlug' : 'orgName')}
        />
        <Field
          label="Your name"
          autoComplete="name"
          required
          value={form.name}
          error={field('name')}
          onChange={edit('name')}
        />
        <Field
          label="E-mail"
          type="email"
          autoComplete="username"
          required
          value={form.email}
          error={field('email')}
          onChange={edit('email')}
        />
        <Field
          label="Password"
          type="password"
          autoComplete="new-password"
          hint="At least 12 characters."
          required
          value={form.password}
          error={field('password')}
          onChange={edit('password')}
        />
        {unplaced && <p role="alert">{unplaced}</p>}
        <Button type="submit" disabled={setUp.isPending}>
          Create organization
        </Button>
      </form>
    </main>
  );
}
