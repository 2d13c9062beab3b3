import { Field } from '../Field';

/**
 * A field for choosing a password: the server's rules as the hint (design record 034), and its
 * refusal, when there is one, in their place.
 */
export function NewPasswordField(props: {
  label: string;
  value: string;
  error: string | undefined;
  onChange: (value: string) => void;
}) {
  return (
    <Field
      label={props.label}
      type="password"
      autoComplete="new-password"
      required
      minLength={12}
      hint="At least 12 characters, not a common password: a few unrelated words work well."
      value={props.value}
      error={props.error}
      onChange={(event) => props.onChange(event.target.value)}
    />
  );
}
