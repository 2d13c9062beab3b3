import { AlertDialog, Dialog } from 'radix-ui';

/**
 * The row at the foot of a dialog: "Cancel" (closes, keeps nothing) and the dialog's one
 * action. In a form the action submits it; in an alert dialog `onConfirm` runs and the dialog
 * closes. `pending` disables the action while the request is under way.
 */
export function DialogActions(props: {
  /** The action's label, a verb phrase ("Create key"). */
  action: string;
  pending?: boolean;
  /** `alert` for an `AlertDialog` (the action confirms); `dialog` for a form in a `Dialog`. */
  kind?: 'dialog' | 'alert';
  onConfirm?: () => void;
  cancel?: string;
}) {
  const cancel = (
    <button type="button" className="quiet">
      {props.cancel ?? 'Cancel'}
    </button>
  );
  if (props.kind === 'alert')
    return (
      <div className="actions">
        <AlertDialog.Cancel asChild>{cancel}</AlertDialog.Cancel>
        <AlertDialog.Action asChild>
          <button type="button" disabled={props.pending} onClick={props.onConfirm}>
            {props.action}
          </button>
        </AlertDialog.Action>
      </div>
    );
  return (
    <div className="actions">
      <Dialog.Close asChild>{cancel}</Dialog.Close>
      <button type="submit" disabled={props.pending}>
        {props.action}
      </button>
    </div>
  );
}
