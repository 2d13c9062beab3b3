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

/** A {@link Labelled} text input. */
export function Field(
  props: {
    label: string;
    error?: string | undefined;
    hint?: string;
  } & React.InputHTMLAttributes<HTMLInputElement>,
) {
  const { label, error, hint, ...input } = props;
  return (
    <Labelled label={label} error={error} hint={hint}>
      {(id, describedBy) => (
        <input
          id={id}
          aria-invalid={error !== undefined}
          aria-describedby={describedBy}
          {...input}
        />
      )}
    </Labelled>
  );
}
