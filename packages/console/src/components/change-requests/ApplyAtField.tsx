import { Labelled } from '../Field';
import { viewerZone } from './when';

/**
 * When to apply, in the viewer's time zone with the zone named in the label, to the second
 * (a `datetime-local` input: the browser's own picker, keyboard entry and form semantics).
 */
export function ApplyAtField(props: {
  value: string;
  onChange: (value: string) => void;
  label?: string;
  hint?: string;
  error?: string | undefined;
}) {
  const zone = viewerZone();
  return (
    <Labelled
      label={`${props.label ?? 'Apply at'} (${zone})`}
      hint={props.hint}
      error={props.error}
    >
      {(id, describedBy) => (
        <input
          id={id}
          type="datetime-local"
          step={1}
          aria-describedby={describedBy}
          aria-invalid={props.error !== undefined}
          value={props.value}
          onChange={(event) => props.onChange(event.target.value)}
        />
      )}
    </Labelled>
  );
}
