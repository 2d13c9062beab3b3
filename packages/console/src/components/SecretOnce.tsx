import { Button } from '@radix-ui/themes';
import { useId, useState } from 'react';

/**
 * A secret the API shows once (an SDK key, a webhook signing secret): read-only in a field, a
 * "Copy" button writing it to the clipboard (Clipboard API) and a visible "Copied" state.
 * When the clipboard is refused the field stays, selected, for copying by hand.
 */
export function SecretOnce(props: { label: string; secret: string; warning: string }) {
  const id = useId();
  const [copied, setCopied] = useState<'no' | 'yes' | 'refused'>('no');
  return (
    <div className="secret-once">
      <label htmlFor={id}>{props.label}</label>
      <div className="row">
        <input
          id={id}
          readOnly
          value={props.secret}
          aria-describedby={`${id}-note`}
          onFocus={(event) => event.target.select()}
        />
        <Button
          type="button"
          onClick={() => {
            navigator.clipboard.writeText(props.secret).then(
              () => setCopied('yes'),
              () => setCopied('refused'),
            );
          }}
        >
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </Button>
      </div>
      <p id={`${id}-note`} className="hint" role="status">
        {copied === 'yes'
          ? 'Copied to the clipboard. '
          : copied === 'refused'
            ? 'The browser refused the clipboard: select the text and copy it by hand. '
            : ''}
        {props.warning}
      </p>
    </div>
  );
}
