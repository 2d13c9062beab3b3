import { TextField } from '@radix-ui/themes';
import { useId } from 'react';

/**
 * A label, a control and its hint or the API's message for it (console.md: honest errors): the
 * message is tied to the control with `aria-describedby`, and the typed text stays.
 */
export function Labelled(props: {
  label: string;
  hint?: string | undefined;
  error?: string | null | undefined;
  children: (id: string, describedBy: string | undefined) => React.ReactNode;
}) {
  const id = useId();
  const note = props.error || props.hint;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, note ? `${id}-note` : undefined)}
      {note && (
        <p id={`${id}-note`} className={props.error ? 'field-error' : 'hint'}>
          {note}
        </p>
      )}
    </div>
  );
}

/** A {@link Labelled} text field (Radix Themes' `TextField`). */
export function Field(
  props: {
    label: string;
    error?: string | undefined;
    hint?: string | undefined;
  } & Omit<React.ComponentProps<typeof TextField.Root>, 'color' | 'children'>,
) {
  const { label, error, hint, ...input } = props;
  return (
    <Labelled label={label} error={error} hint={hint}>
      {(id, describedBy) => (
        <TextField.Root
          id={id}
          aria-invalid={error !== undefined}
          aria-describedby={describedBy}
          color={error !== undefined ? 'red' : undefined}
          {...input}
        />
      )}
    </Labelled>
  );
}
