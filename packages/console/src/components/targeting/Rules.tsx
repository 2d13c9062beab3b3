import { Button } from '@radix-ui/themes';
import { useState } from 'react';
import type { Flag, Rule, Segment } from '../../api/types';
import { percentageOf } from './PercentageControl';
import { RuleEditor } from './RuleEditor';
import { describeRule } from './sentence';
import { useTargetingWrites } from './writes';
import { useFormMutation } from '../useFormMutation';

/**
 * The environment's targeting rules in evaluation order (journey 3): drag a rule, or use its
 * move buttons from the keyboard, to reorder (`PUT …/rules/reorder`); edit and delete each.
 */
export function Rules(props: {
  flag: Flag;
  environment: string;
  rules: Rule[];
  segments: Segment[];
  canEdit: boolean;
}) {
  const { flag, environment, rules, segments, canEdit } = props;
  const writes = useTargetingWrites();
  const [dragged, setDragged] = useState<string | null>(null);
  const variationName = (id: string) => {
    const variation = flag.variations.find((v) => v.id === id);
    return variation?.name ?? variation?.key ?? id;
  };

  const reorder = useFormMutation({
    mutationFn: (ruleIds: string[]) => writes.reorderRules(ruleIds),
  });
  const remove = useFormMutation({
    mutationFn: ({ rule, label }: { rule: Rule; label: string }) => writes.deleteRule(rule, label),
  });

  function move(ruleId: string, to: number) {
    const ids = rules.map((rule) => rule.id).filter((id) => id !== ruleId);
    ids.splice(Math.max(0, Math.min(to, ids.length)), 0, ruleId);
    reorder.mutate(ids);
  }

  return (
    <section aria-label={`Rules in ${environment}`}>
      <div className="page-heading">
        <h3>Rules</h3>
        {canEdit && (
          <RuleEditor flag={flag} environment={environment} segments={segments} label="Add rule" />
        )}
      </div>
      {rules.length === 0 && (
        <p className="hint">No rules: every context gets the default serve.</p>
      )}
      <ol className="rules">
        {rules.map((rule, index) => {
          const name = `Rule ${index + 1}${rule.description ? `: ${rule.description}` : ''}`;
          return (
            <li
              key={rule.id}
              aria-label={name}
              draggable={canEdit}
              className={dragged === rule.id ? 'dragging' : undefined}
              onDragStart={(event) => {
                event.dataTransfer.setData('text/plain', rule.id);
                setDragged(rule.id);
              }}
              onDragEnd={() => setDragged(null)}
              onDragOver={(event) => event.preventDefault()}
              onDrop={(event) => {
                event.preventDefault();
                const id = event.dataTransfer.getData('text/plain');
                if (id && id !== rule.id) move(id, index);
              }}
            >
              <div>
                <strong>{name}</strong>
                <p className="hint">
                  If {describeRule(rule, segments) || 'any context'}, serve{' '}
                  {variationName(rule.variationId)}
                  {rule.rolloutWeight !== null && ` to ${percentageOf(rule.rolloutWeight)}%`}
                </p>
              </div>
              {canEdit && (
                <div className="row">
                  <Button
                    type="button"
                    variant="soft"
                    color="gray"
                    disabled={index === 0}
                    onClick={() => move(rule.id, index - 1)}
                  >
                    Move rule {index + 1} up
                  </Button>
                  <Button
                    type="button"
                    variant="soft"
                    color="gray"
                    disabled={index === rules.length - 1}
                    onClick={() => move(rule.id, index + 1)}
                  >
                    Move rule {index + 1} down
                  </Button>
                  <RuleEditor
                    flag={flag}
                    environment={environment}
                    rule={rule}
                    segments={segments}
                    label={`Edit rule ${index + 1}`}
                    ruleName={`Rule ${index + 1}`}
                  />
                  <Button
                    type="button"
                    variant="soft"
                    color="gray"
                    onClick={() => remove.mutate({ rule, label: `Rule ${index + 1}` })}
                  >
                    Delete rule {index + 1}
                  </Button>
                </div>
              )}
            </li>
          );
        })}
      </ol>
      {(reorder.error ?? remove.error) && (
        <p role="alert" className="field-error">
          {(reorder.error ?? remove.error)?.message}
        </p>
      )}
    </section>
  );
}
