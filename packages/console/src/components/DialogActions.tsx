import { AlertDialog, Dialog } from 'radix-ui';

/**
 * The action row at the foot of every dialog: a quiet "Cancel" that closes it, and the confirming
 * button. Without `onConfirm` the confirming button submits the dialog's form; with it, the button
 * calls `onConfirm` (and, in an alert dialog, closes it unless `keepOpen`, so an error can show).
 * Disabled while `busy`.
 */
export function DialogActions(props: {
  confirmLabel: string;
  cancelLabel?: string;
  busy?: boolean;
  onConfirm?: () => void;
  /** An AlertDialog (Radix) rather than a Dialog: their close parts differ. */
  alert?: boolean;
  /** Keep an alert dialog open on confirm (the caller closes it when the change succeeds). */
  keepOpen?: boolean;
}) {
  const { confirmLabel, cancelLabel = 'Cancel', busy = false, onConfirm, alert, keepOpen } = props;
  const Close = alert ? AlertDialog.Cancel : Dialog.Close;
  const confirm = onConfirm ? (
    <button type="button" disabled={busy} onClick={onConfirm}>
      {confirmLabel}
    </button>
  ) : (
    <button type="submit" disabled={busy}>
      {confirmLabel}
    </button>
  );
  return (
    <div className="actions">
      <Close asChild>
        <button type="button" className="quiet">
          {cancelLabel}
        </button>
      </Close>
      {alert && onConfirm && !keepOpen ? (
        <AlertDialog.Action asChild>{confirm}</AlertDialog.Action>
      ) : (
        confirm
      )}
    </div>
  );
}
