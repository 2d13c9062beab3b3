import { Button, Dialog } from '@radix-ui/themes';
import { useState } from 'react';
import { DialogActions } from './DialogActions';
import type { FormMutation } from './useFormMutation';

/**
 * A button opening a dialog whose form saves through the API ("New …", "Edit"): the draft starts
 * afresh at each opening (`onOpen`), a failure no field carries is shown above the actions, and a
 * successful save closes the dialog, unless `result` has something to show in place of the form
 * (a secret shown once). Every dialog of the console has this one body: title, description, the
 * form's fields, its message and {@link DialogActions}.
 */
export function FormDialog<T>(props: {
  /** The trigger's text, and its accessible name when `label` alone is ambiguous in a list. */
  label: string;
  ariaLabel?: string | undefined;
  /** A quiet trigger, for a row's "Edit" beside other row actions. */
  quiet?: boolean;
  title: string;
  description: React.ReactNode;
  wide?: boolean;
  form: FormMutation<T>;
  confirmLabel: string;
  onOpen: () => void;
  result?: (data: T) => React.ReactElement | null;
  children: React.ReactNode;
}) {
  const { form } = props;
  const [opened, setOpened] = useState(false);
  const shown = form.isSuccess && props.result ? props.result(form.data) : null;
  // A save that succeeds closes the dialog by this rule, so the page's mutation needs no access
  // to the dialog's state; opening it again resets the mutation, and with it the rule.
  const open = opened && !(form.isSuccess && shown === null);
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        if (next) {
          props.onOpen();
          form.reset();
        }
        setOpened(next);
      }}
    >
      <Dialog.Trigger>
        <Button
          type="button"
          variant={props.quiet ? 'soft' : 'solid'}
          color={props.quiet ? 'gray' : undefined}
          aria-label={props.ariaLabel}
        >
          {props.label}
        </Button>
      </Dialog.Trigger>
      <Dialog.Content className={props.wide ? 'dialog-body wide' : 'dialog-body'}>
        <Dialog.Title>{props.title}</Dialog.Title>
        <Dialog.Description className="hint">{props.description}</Dialog.Description>
        {shown ?? (
          <form onSubmit={form.submit}>
            {props.children}
            {form.message && (
              <p role="alert" className="field-error">
                {form.message}
              </p>
            )}
            <DialogActions confirmLabel={props.confirmLabel} busy={form.isPending} />
          </form>
        )}
      </Dialog.Content>
    </Dialog.Root>
  );
}
