import { useId } from 'react';

/**
 * A labelled input with its hint or the API's message for it (console.md: honest errors): the
 * message is tied to the control with `aria-describedby`, and the typed text stays.
 */
export function Field(
  props: {
    label: string;
    error?: string | undefined;
    hint?: string;
  } & React.InputHTMLAttributes<HTMLInputElement>,
) {
  const { label, error, hint, ...input } = props;
  const id = useId();
  const note = error ?? hint;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        aria-invalid={error !== undefined}
        aria-describedby={note ? `${id}-note` : undefined}
        {...input}
      />
      {note && (
        <p id={`${id}-note`} className={error ? 'field-error' : 'hint'}>
          {note}
        </p>
      )}
    </div>
  );
}
