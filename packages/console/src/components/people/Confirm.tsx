import { AlertDialog } from 'radix-ui';

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
          <div className="actions">
            <AlertDialog.Cancel asChild>
              <button type="button" className="quiet">
                Cancel
              </button>
            </AlertDialog.Cancel>
            <AlertDialog.Action asChild>
              <button type="button" onClick={props.onConfirm}>
                {props.confirm}
              </button>
            </AlertDialog.Action>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
