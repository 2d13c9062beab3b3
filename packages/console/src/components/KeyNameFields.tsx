import { Field } from './Field';
import { keyFromName } from './key-from-name';

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
 *
 * With `keyFromName` the name comes first and the key is made from it as it is typed, for as
 * long as the key is still the one made from the name (typing a key of one's own ends that):
 * flags, and the first organization.
 */
export function KeyNameFields<D extends KeyNameDraft>(props: {
  draft: D;
  onChange: (draft: D) => void;
  problemAt: (field: string) => string | undefined;
  withKey?: boolean;
  keyHint?: string;
  noun?: string;
  keyFromName?: boolean;
  children?: React.ReactNode;
}) {
  const { draft, onChange, problemAt, withKey = true } = props;
  const label = (field: string) => (props.noun ? `${props.noun} ${field.toLowerCase()}` : field);
  const follows = props.keyFromName === true && draft.key === keyFromName(draft.name);
  const keyField = withKey && (
    <Field
      label={label('Key')}
      required
      autoComplete="off"
      value={draft.key}
      onChange={(event) => onChange({ ...draft, key: event.target.value })}
      hint={props.keyHint}
      error={problemAt('key')}
    />
  );
  return (
    <>
      {!props.keyFromName && keyField}
      <Field
        label={label('Name')}
        value={draft.name}
        onChange={(event) => {
          const name = event.target.value;
          onChange({ ...draft, name, ...(follows ? { key: keyFromName(name) } : {}) });
        }}
        error={problemAt('name')}
      />
      {props.keyFromName && keyField}
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
