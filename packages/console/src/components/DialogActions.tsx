import { AlertDialog, Button, Dialog } from '@radix-ui/themes';

/**
 * The action row at the foot of every dialog: a quiet "Cancel" that closes it, and the confirming
 * button. Without `onConfirm` the confirming button submits the dialog's form; with it, the button
 * calls `onConfirm` (and, in an alert dialog, closes it unless `keepOpen`, so an error can show).
 * Disabled while `busy`. `danger` colours the confirming button red (deletions, revocations):
 * soft, since white on Radix's solid red is under WCAG's 4.5:1 contrast.
 */
export function DialogActions(props: {
  confirmLabel: string;
  cancelLabel?: string;
  busy?: boolean;
  onConfirm?: () => void;
  /** An AlertDialog rather than a Dialog: their close parts differ. */
  alert?: boolean;
  /** Keep an alert dialog open on confirm (the caller closes it when the change succeeds). */
  keepOpen?: boolean;
  danger?: boolean;
}) {
  const { confirmLabel, cancelLabel = 'Cancel', busy = false, onConfirm, alert, keepOpen } = props;
  const Close = alert ? AlertDialog.Cancel : Dialog.Close;
  const confirm = (
    <Button
      type={onConfirm ? 'button' : 'submit'}
      color={props.danger ? 'red' : undefined}
      variant={props.danger ? 'soft' : 'solid'}
      disabled={busy}
      onClick={onConfirm}
    >
      {confirmLabel}
    </Button>
  );
  return (
    <div className="actions">
      <Close>
        <Button type="button" variant="soft" color="gray">
          {cancelLabel}
        </Button>
      </Close>
      {alert && onConfirm && !keepOpen ? (
        <AlertDialog.Action>{confirm}</AlertDialog.Action>
      ) : (
        confirm
      )}
    </div>
  );
}
