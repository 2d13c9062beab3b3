import { AlertDialog } from 'radix-ui';
import { DialogActions } from './DialogActions';

/**
 * A button that asks before an irreversible change (remove, revoke, delete): Radix's alert
 * dialog traps focus and puts Cancel first, so Enter does not confirm by accident.
 */
export function ConfirmButton(props: {
  label: string;
  /** The accessible name of the trigger when `label` alone is ambiguous in a list. */
  ariaLabel?: string;
  title: string;
  description: string;
  confirm: string;
  disabled?: boolean;
  /** The change is under way: confirming again is disabled. */
  busy?: boolean;
  onConfirm: () => void;
}) {
  return (
    <AlertDialog.Root>
      <AlertDialog.Trigger asChild>
        <button
          type="button"
          className="quiet"
          aria-label={props.ariaLabel}
          disabled={props.disabled}
        >
          {props.label}
        </button>
      </AlertDialog.Trigger>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="overlay" />
        <AlertDialog.Content className="dialog">
          <AlertDialog.Title>{props.title}</AlertDialog.Title>
          <AlertDialog.Description>{props.description}</AlertDialog.Description>
          <DialogActions
            alert
            confirmLabel={props.confirm}
            busy={props.busy}
            onConfirm={props.onConfirm}
          />
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
