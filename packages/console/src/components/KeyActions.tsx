import { Button, Dialog } from '@radix-ui/themes';
import type { ReactNode } from 'react';
import { ConfirmButton } from './ConfirmButton';
import { SecretOnce } from './SecretOnce';

/**
 * What a create dialog of a key (an SDK key, a relay key) shows once the key is made: the secret,
 * shown this once with its copy button, what to do with it (`children`), and "Done".
 */
export function CreatedKey(props: {
  label: string;
  secret: string;
  warning: string;
  children?: ReactNode;
}) {
  return (
    <>
      <SecretOnce label={props.label} secret={props.secret} warning={props.warning} />
      {props.children}
      <div className="actions">
        <Dialog.Close>
          <Button type="button">Done</Button>
        </Dialog.Close>
      </div>
    </>
  );
}

/**
 * The revoke action of a key's row: a confirmation saying what revoking does, then `revoke`;
 * its error beside the button.
 * @param what the key as the labels name it, e.g. `relay key eu-west`
 */
export function RevokeKey(props: {
  name: string;
  what: string;
  consequence: string;
  revoke: { isPending: boolean; error: Error | null; mutate: () => void };
}) {
  const { revoke } = props;
  return (
    <>
      <ConfirmButton
        label="Revoke"
        ariaLabel={`Revoke ${props.what}`}
        title={`Revoke ${props.what}?`}
        description={`${props.consequence} This cannot be undone.`}
        confirm={`Revoke ${props.name}`}
        busy={revoke.isPending}
        onConfirm={() => revoke.mutate()}
      />
      {revoke.error && (
        <span role="alert" className="field-error">
          {revoke.error.message}
        </span>
      )}
    </>
  );
}
