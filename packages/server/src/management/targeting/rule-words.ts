import { OPERATOR_WORDS } from '@vexil/engine';
import type { StoredCondition, StoredConditionGroup } from '../../db/schema.js';

// A condition matches when any of its values does: "DE or AT".
const anyOf = new Intl.ListFormat('en', { type: 'disjunction' });

function conditionInWords(condition: StoredCondition): string {
  const operator = OPERATOR_WORDS[condition.operator][condition.negate ? 1 : 0];
  return `${condition.attribute} ${operator} ${anyOf.format(condition.values)}`;
}

/**
 * Which rule an audit entry is about, for a person reading a flag's history (issue 43, item 8:
 * "Rule 1 added" said nothing of the rule): its description in quotes when it has one, else what
 * it matches in words, `when the context is in segment beta and country is one of DE or AT and
 * (plan is pro or seats is at least 10)`, or `for every context` when it has no condition.
 * @param rule.segmentKey - the key of the rule's segment, null when it names none
 */
export function ruleInWords(rule: {
  description: string | null;
  segmentKey: string | null;
  conditionGroups: readonly StoredConditionGroup[];
}): string {
  if (rule.description !== null && rule.description.trim() !== '')
    return `"${rule.description.trim()}"`;
  const groups = rule.conditionGroups.filter((group) => group.conditions.length > 0);
  const segment = rule.segmentKey === null ? [] : [`the context is in segment ${rule.segmentKey}`];
  const several = segment.length + groups.length > 1;
  const parts = [
    ...segment,
    // Groups hold together with And; a group of several conditions among others is bracketed.
    ...groups.map((group) => {
      const words = group.conditions
        .map(conditionInWords)
        .join(` ${group.operator.toLowerCase()} `);
      return several && group.conditions.length > 1 ? `(${words})` : words;
    }),
  ];
  return parts.length === 0 ? 'for every context' : `when ${parts.join(' and ')}`;
}
