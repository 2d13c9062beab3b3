import { useState } from 'react';
import { Labelled } from '../Field';

/**
 * A secret the API returns only once (a token, an invitation link), in a read-only field with a
 * Copy button, and a note that it will not be shown again.
 */
export function ShownOnce(props: { label: string; value: string; note: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="shown-once" role="status">
      <Labelled label={props.label} hint={props.note}>
        {(id, describedBy) => (
          <div className="row">
            <input
              id={id}
              readOnly
              value={props.value}
              aria-describedby={describedBy}
              onFocus={(event) => event.target.select()}
            />
            <button
              type="button"
              onClick={() =>
                void navigator.clipboard.writeText(props.value).then(() => setCopied(true))
              }
            >
              {copied ? 'Copied' : 'Copy'}
            </button>
          </div>
        )}
      </Labelled>
    </div>
  );
}
