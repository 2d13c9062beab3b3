import { Field } from './Field';

/** The key, name and (for some resources) description a draft carries, as typed. */
export interface KeyNameDraft {
  key: string;
  name: string;
  description?: string;
}

/**
 * The fields naming a resource, in every dialog that creates or edits one (flag variations,
 * environments, segments): its key (only while it can still be chosen; `keyHint` says what the
 * key is for), its name and, when the draft has one, its description, each with the API's
 * message for it. `noun` prefixes the labels ("Variation key") where the dialog holds other keys.
 * Fields particular to the resource go between name and description (`children`).
 */
export function KeyNameFields<D extends KeyNameDraft>(props: {
  draft: D;
  onChange: (draft: D) => void;
  problemAt: (field: string) => string | undefined;
  withKey?: boolean;
  keyHint?: string;
  noun?: string;
  children?: React.ReactNode;
}) {
  const { draft, onChange, problemAt, withKey = true } = props;
  const label = (field: string) => (props.noun ? `${props.noun} ${field.toLowerCase()}` : field);
  return (
    <>
      {withKey && (
        <Field
          label={label('Key')}
          required
          autoComplete="off"
          value={draft.key}
          onChange={(event) => onChange({ ...draft, key: event.target.value })}
          hint={props.keyHint}
          error={problemAt('key')}
        />
      )}
      <Field
        label={label('Name')}
        value={draft.name}
        onChange={(event) => onChange({ ...draft, name: event.target.value })}
        error={problemAt('name')}
      />
      {props.children}
      {draft.description !== undefined && (
        <Field
          label={label('Description')}
          value={draft.description}
          onChange={(event) => onChange({ ...draft, description: event.target.value })}
          error={problemAt('description')}
        />
      )}
    </>
  );
}
