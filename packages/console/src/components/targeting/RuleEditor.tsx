import { useMutation, useQueryClient } from '@tanstack/react-query';
import { CONDITION_OPERATORS } from '@vexil/engine';
import { Dialog } from 'radix-ui';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../../api/client';
import type { Flag, Rule, Segment } from '../../api/types';
import { Labelled } from '../Field';
import { DialogActions } from '../DialogActions';
import { PercentageControl, percentageOf, weightOf } from './PercentageControl';

interface DraftCondition {
  attribute: string;
  operator: string;
  /** One value per line, as typed (kept on an error). */
  values: string;
  negate: boolean;
}

interface DraftGroup {
  operator: 'And' | 'Or';
  conditions: DraftCondition[];
}

const emptyCondition = (): DraftCondition => ({
  attribute: '',
  operator: 'Equals',
  values: '',
  negate: false,
});

interface Draft {
  description: string;
  variationId: string;
  /** A percentage (to 0.001%) as typed; empty means every matching context. */
  rollout: string;
  segmentId: string;
  groups: DraftGroup[];
}

function draftOf(rule: Rule | undefined, flag: Flag): Draft {
  return {
    description: rule?.description ?? '',
    variationId: rule?.variationId ?? flag.variations[0]?.id ?? '',
    rollout: rule?.rolloutWeight == null ? '' : percentageOf(rule.rolloutWeight),
    segmentId: rule?.userSegmentId ?? '',
    groups: rule?.conditionGroups.map((group) => ({
      operator: group.operator,
      conditions: group.conditions.map(({ attribute, operator, values, negate }) => ({
        attribute,
        operator,
        values: values.join('\n'),
        negate,
      })),
    })) ?? [{ operator: 'And', conditions: [emptyCondition()] }],
  };
}

/**
 * The targeting-rule editor (journey 3): condition groups of conditions (every engine operator,
 * negate), a segment, the served variation and an optional rollout percentage. Saves with
 * `POST …/rules` or `PUT …/rules/{rule}`; the API's field errors appear at their controls and
 * nothing typed is lost.
 */
export function RuleEditor(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  rule?: Rule;
  segments: Segment[];
  trigger: React.ReactNode;
}) {
  const { org, project, flag, environment, rule, segments } = props;
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState(() => draftOf(rule, flag));
  const queryClient = useQueryClient();
  const path = { org, project, flag: flag.key ?? flag.id, env: environment };

  const save = useMutation({
    mutationFn: () => {
      const body = {
        description: draft.description.trim() || null,
        variationId: draft.variationId,
        rolloutWeight: draft.rollout.trim() === '' ? null : weightOf(draft.rollout),
        userSegmentId: draft.segmentId || null,
        conditionGroups: draft.groups.map((group) => ({
          operator: group.operator,
          conditions: group.conditions.map((c) => ({
            attribute: c.attribute,
            operator: c.operator,
            values: c.values.split('\n').filter((value) => value !== ''),
            negate: c.negate,
          })),
        })),
      };
      return rule
        ? unwrap(
            api.PUT(
              '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}',
              { params: { path: { ...path, rule: rule.id } }, body },
            ),
          )
        : unwrap(
            api.POST(
              '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules',
              {
                params: { path },
                body,
              },
            ),
          );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['flag', org, project, path.flag] });
      setOpen(false);
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  /** Every message the API gave for this field or below it. */
  const problemAt = (field: string) =>
    problem &&
    Object.entries(problem.fields)
      .filter(([name]) => name === field || name.startsWith(`${field}.`))
      .flatMap(([, messages]) => messages)
      .join('; ');

  function setGroup(index: number, group: DraftGroup | null) {
    const groups = draft.groups.flatMap((g, i) => (i !== index ? [g] : group ? [group] : []));
    setDraft({ ...draft, groups });
  }

  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        if (next) {
          setDraft(draftOf(rule, flag));
          save.reset();
        }
        setOpen(next);
      }}
    >
      <Dialog.Trigger asChild>{props.trigger}</Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog wide">
          <Dialog.Title>{rule ? 'Edit rule' : 'New rule'}</Dialog.Title>
          <Dialog.Description className="hint">
            The rule matches when the context is in the segment (if any) and every condition group
            matches; the first matching rule serves its variation.
          </Dialog.Description>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              save.mutate();
            }}
          >
            <Labelled label="Description" error={problemAt('description')}>
              {(id, describedBy) => (
                <input
                  id={id}
                  aria-describedby={describedBy}
                  value={draft.description}
                  onChange={(event) => setDraft({ ...draft, description: event.target.value })}
                />
              )}
            </Labelled>
            {draft.groups.map((group, g) => (
              <fieldset key={g} className="group">
                <legend>Condition group {g + 1}</legend>
                <Labelled label={`Group ${g + 1} matches when`}>
                  {(id) => (
                    <select
                      id={id}
                      value={group.operator}
                      onChange={(event) =>
                        setGroup(g, { ...group, operator: event.target.value as 'And' | 'Or' })
                      }
                    >
                      <option value="And">all conditions match</option>
                      <option value="Or">any condition matches</option>
                    </select>
                  )}
                </Labelled>
                {group.conditions.map((condition, c) => {
                  const at = `conditionGroups.${g}.conditions.${c}`;
                  const name = `group ${g + 1} condition ${c + 1}`;
                  const set = (change: Partial<DraftCondition>) =>
                    setGroup(g, {
                      ...group,
                      conditions: group.conditions.map((old, i) =>
                        i === c ? { ...old, ...change } : old,
                      ),
                    });
                  return (
                    <div
                      key={c}
                      className="condition"
                      role="group"
                      aria-label={`Condition ${c + 1} of group ${g + 1}`}
                    >
                      <Labelled label={`Attribute, ${name}`} error={problemAt(`${at}.attribute`)}>
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
                      <Labelled label={`Operator, ${name}`} error={problemAt(`${at}.operator`)}>
                        {(id, describedBy) => (
                          <select
                            id={id}
                            aria-describedby={describedBy}
                            value={condition.operator}
                            onChange={(event) => set({ operator: event.target.value })}
                          >
                            {CONDITION_OPERATORS.map((operator) => (
                              <option key={operator}>{operator}</option>
                            ))}
                          </select>
                        )}
                      </Labelled>
                      <Labelled
                        label={`Values, ${name}`}
                        hint="One per line"
                        error={problemAt(`${at}.values`)}
                      >
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
                      <label className="check">
                        <input
                          type="checkbox"
                          checked={condition.negate}
                          onChange={(event) => set({ negate: event.target.checked })}
                        />
                        Negate {name}
                      </label>
                      <button
                        type="button"
                        className="quiet"
                        onClick={() =>
                          setGroup(g, {
                            ...group,
                            conditions: group.conditions.filter((_, i) => i !== c),
                          })
                        }
                      >
                        Remove {name}
                      </button>
                    </div>
                  );
                })}
                <div className="row">
                  <button
                    type="button"
                    className="quiet"
                    onClick={() =>
                      setGroup(g, { ...group, conditions: [...group.conditions, emptyCondition()] })
                    }
                  >
                    Add condition to group {g + 1}
                  </button>
                  <button type="button" className="quiet" onClick={() => setGroup(g, null)}>
                    Remove group {g + 1}
                  </button>
                </div>
              </fieldset>
            ))}
            <button
              type="button"
              className="quiet"
              onClick={() =>
                setDraft({
                  ...draft,
                  groups: [...draft.groups, { operator: 'And', conditions: [emptyCondition()] }],
                })
              }
            >
              Add condition group
            </button>
            <Labelled label="Segment" error={problemAt('userSegmentId')}>
              {(id, describedBy) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  value={draft.segmentId}
                  onChange={(event) => setDraft({ ...draft, segmentId: event.target.value })}
                >
                  <option value="">No segment</option>
                  {segments.map((segment) => (
                    <option key={segment.id} value={segment.id}>
                      {segment.name ?? segment.key}
                    </option>
                  ))}
                </select>
              )}
            </Labelled>
            <Labelled label="Serve" error={problemAt('variationId')}>
              {(id, describedBy) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  value={draft.variationId}
                  onChange={(event) => setDraft({ ...draft, variationId: event.target.value })}
                >
                  {flag.variations.map((variation) => (
                    <option key={variation.id} value={variation.id}>
                      {variation.name ?? variation.key}
                    </option>
                  ))}
                </select>
              )}
            </Labelled>
            <PercentageControl
              label="Rollout percentage"
              sliderLabel="Rollout share"
              hint="Of the matching contexts, this share (to 0.001%) gets the variation; empty: all"
              error={problemAt('rolloutWeight') || problemAt('rolloutPercentage')}
              value={draft.rollout}
              onChange={(rollout) => setDraft({ ...draft, rollout })}
            />
            {save.error && (
              <p role="alert" className="field-error">
                {save.error.message}
              </p>
            )}
            <DialogActions confirmLabel="Save rule" busy={save.isPending} />
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
