import { AlertDialog, Button } from '@radix-ui/themes';
import { DialogActions } from './DialogActions';

/**
 * A button that asks before an irreversible change (remove, revoke, delete): the alert dialog
 * traps focus and puts Cancel first, so Enter does not confirm by accident.
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
      <AlertDialog.Trigger>
        <Button
          type="button"
          variant="soft"
          color="gray"
          aria-label={props.ariaLabel}
          disabled={props.disabled}
        >
          {props.label}
        </Button>
      </AlertDialog.Trigger>
      <AlertDialog.Content className="dialog-body">
        <AlertDialog.Title>{props.title}</AlertDialog.Title>
        <AlertDialog.Description>{props.description}</AlertDialog.Description>
        <DialogActions
          alert
          danger
          confirmLabel={props.confirm}
          busy={props.busy}
          onConfirm={props.onConfirm}
        />
      </AlertDialog.Content>
    </AlertDialog.Root>
  );
}
