import { Button } from '@radix-ui/themes';
import { CONDITION_OPERATORS, OPERATOR_WORDS } from '@vexil/engine';
import { Labelled } from '../Field';

/** A condition as typed in the editor. */
export interface DraftCondition {
  attribute: string;
  operator: string;
  /** One value per line, as typed (kept on an error). */
  values: string;
  negate: boolean;
}

/** Conditions joined by one logical operator: a rule's condition group, or a segment. */
export interface DraftGroup {
  operator: 'And' | 'Or';
  conditions: DraftCondition[];
}

/** A blank condition (`Equals`, no value). */
export const emptyCondition = (): DraftCondition => ({
  attribute: '',
  operator: 'Equals',
  values: '',
  negate: false,
});

/** The editor's draft of conditions as the API returns them. */
export function draftConditions(
  conditions: { attribute: string; operator: string; values: string[]; negate: boolean }[],
): DraftCondition[] {
  return conditions.map(({ attribute, operator, values, negate }) => ({
    attribute,
    operator,
    values: values.join('\n'),
    negate,
  }));
}

/** The API's condition input from the draft: one value per non-empty line. */
export function conditionsOfDraft(conditions: DraftCondition[]) {
  return conditions.map((c) => ({
    attribute: c.attribute,
    operator: c.operator,
    values: c.values.split('\n').filter((value) => value !== ''),
    negate: c.negate,
  }));
}

/**
 * The condition editor shared by targeting rules and segments: how the conditions combine, and
 * each condition's attribute, operator (every engine operator, in words), values and negation.
 * `path` is where the API reports problems (`conditionGroups.0.conditions`, `conditions`);
 * `conditionLabel(c)` names condition `c` (0-based), e.g. "Condition 2 of group 1": each
 * condition is a group of that name whose controls read plainly ("Attribute", "Operator").
 */
export function ConditionGroupEditor(props: {
  group: DraftGroup;
  onChange: (group: DraftGroup) => void;
  path: string;
  operatorLabel: string;
  conditionLabel: (c: number) => string;
  addLabel: string;
  problemAt: (field: string) => string | undefined;
  children?: React.ReactNode;
}) {
  const { group, onChange, problemAt } = props;
  return (
    <>
      <Labelled label={props.operatorLabel}>
        {(id) => (
          <select
            id={id}
            value={group.operator}
            onChange={(event) =>
              onChange({ ...group, operator: event.target.value as 'And' | 'Or' })
            }
          >
            <option value="And">all conditions match</option>
            <option value="Or">any condition matches</option>
          </select>
        )}
      </Labelled>
      {group.conditions.map((condition, c) => {
        const at = `${props.path}.${c}`;
        const name = props.conditionLabel(c);
        const set = (change: Partial<DraftCondition>) =>
          onChange({
            ...group,
            conditions: group.conditions.map((old, i) => (i === c ? { ...old, ...change } : old)),
          });
        return (
          <div key={c} className="condition" role="group" aria-label={name}>
            <Labelled label="Attribute" error={problemAt(`${at}.attribute`)}>
              {(id, describedBy) => (
                <input
                  id={id}
                  aria-describedby={describedBy}
                  value={condition.attribute}
                  placeholder="country"
                  onChange={(event) => set({ attribute: event.target.value })}
                />
              )}
            </Labelled>
            <Labelled label="Operator" error={problemAt(`${at}.operator`)}>
              {(id, describedBy) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  value={condition.operator}
                  onChange={(event) => set({ operator: event.target.value })}
                >
                  {CONDITION_OPERATORS.map((operator) => (
                    <option key={operator} value={operator}>
                      {OPERATOR_WORDS[operator][0]}
                    </option>
                  ))}
                </select>
              )}
            </Labelled>
            <Labelled label="Values" hint="One per line" error={problemAt(`${at}.values`)}>
              {(id, describedBy) => (
                <textarea
                  id={id}
                  rows={2}
                  aria-describedby={describedBy}
                  aria-invalid={Boolean(problemAt(`${at}.values`))}
                  value={condition.values}
                  onChange={(event) => set({ values: event.target.value })}
                />
              )}
            </Labelled>
            <div className="row">
              <label className="check">
                <input
                  type="checkbox"
                  checked={condition.negate}
                  onChange={(event) => set({ negate: event.target.checked })}
                />
                Negate
              </label>
              <Button
                type="button"
                variant="soft"
                color="gray"
                onClick={() =>
                  onChange({ ...group, conditions: group.conditions.filter((_, i) => i !== c) })
                }
              >
                Remove {name.toLowerCase()}
              </Button>
            </div>
          </div>
        );
      })}
      <div className="row">
        <Button
          type="button"
          variant="soft"
          color="gray"
          onClick={() =>
            onChange({ ...group, conditions: [...group.conditions, emptyCondition()] })
          }
        >
          {props.addLabel}
        </Button>
        {props.children}
      </div>
    </>
  );
}
