import { Button } from '@radix-ui/themes';
import { useState } from 'react';
import type { Flag, Rule, Segment } from '../../api/types';
import { Labelled } from '../Field';
import { FormDialog } from '../FormDialog';
import { usePlace } from '../Shell';
import { useFormMutation } from '../useFormMutation';
import { PercentageControl, percentageOf, weightOf } from './PercentageControl';
import {
  ConditionGroupEditor,
  conditionsOfDraft,
  draftConditions,
  emptyCondition,
  type DraftGroup,
} from './ConditionGroup';
import { useTargetingWrites } from './writes';

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
      conditions: draftConditions(group.conditions),
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
  flag: Flag;
  environment: string;
  rule?: Rule;
  segments: Segment[];
  /** The trigger's text: "Add rule", or "Edit rule 2" for `rule`. */
  label: string;
  /** How the pending changes name `rule`: "Rule 2". */
  ruleName?: string;
}) {
  const { flag, environment, rule, segments } = props;
  const [draft, setDraft] = useState(() => draftOf(rule, flag));
  const writes = useTargetingWrites();
  const environmentName =
    usePlace().environments.find((e) => e.key === environment)?.name ?? environment;

  const save = useFormMutation({
    mutationFn: () => {
      const body = {
        description: draft.description.trim() || null,
        variationId: draft.variationId,
        rolloutWeight: draft.rollout.trim() === '' ? null : weightOf(draft.rollout),
        userSegmentId: draft.segmentId || null,
        conditionGroups: draft.groups.map((group) => ({
          operator: group.operator,
          conditions: conditionsOfDraft(group.conditions),
        })),
      };
      return writes.saveRule(rule ?? null, body, props.ruleName ?? 'Rule');
    },
  });
  const { problemAt } = save;

  function setGroup(index: number, group: DraftGroup | null) {
    const groups = draft.groups.flatMap((g, i) => (i !== index ? [g] : group ? [group] : []));
    setDraft({ ...draft, groups });
  }

  return (
    <FormDialog
      label={props.label}
      quiet={rule !== undefined}
      title={`${rule ? 'Edit rule' : 'New rule'} in ${environmentName}`}
      description="The rule matches when the context is in the segment (if any) and every condition group matches; the first matching rule serves its variation."
      wide
      form={save}
      confirmLabel={writes.collecting ? 'Add rule to pending changes' : 'Save rule'}
      onOpen={() => setDraft(draftOf(rule, flag))}
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
          <ConditionGroupEditor
            group={group}
            onChange={(changed) => setGroup(g, changed)}
            path={`conditionGroups.${g}.conditions`}
            operatorLabel={`Group ${g + 1} matches when`}
            conditionLabel={(c) => `Condition ${c + 1} of group ${g + 1}`}
            addLabel={`Add condition to group ${g + 1}`}
            problemAt={problemAt}
          >
            <Button type="button" variant="soft" color="gray" onClick={() => setGroup(g, null)}>
              Remove group {g + 1}
            </Button>
          </ConditionGroupEditor>
        </fieldset>
      ))}
      <Button
        type="button"
        variant="soft"
        color="gray"
        onClick={() =>
          setDraft({
            ...draft,
            groups: [...draft.groups, { operator: 'And', conditions: [emptyCondition()] }],
          })
        }
      >
        Add condition group
      </Button>
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
        error={problemAt('rolloutWeight') ?? problemAt('rolloutPercentage')}
        value={draft.rollout}
        emptyMeans={100}
        onChange={(rollout) => setDraft({ ...draft, rollout })}
      />
    </FormDialog>
  );
}
