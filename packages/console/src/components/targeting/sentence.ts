import { OPERATOR_WORDS, type ConditionOperator } from '@vexil/engine';
import type { Rule, Segment } from '../../api/types';

/** The words for `operator`; an operator this console does not know reads as its name. */
export function operatorInWords(operator: string, negate = false): string {
  const words = OPERATOR_WORDS[operator as ConditionOperator] as
    readonly [string, string] | undefined;
  return words ? words[negate ? 1 : 0] : `${negate ? 'not ' : ''}${operator}`;
}

// A condition matches when any of its values does: "DE or AT".
const anyOf = new Intl.ListFormat('en', { type: 'disjunction' });

/** A condition as a sentence: "country is one of DE or AT". */
export function describeCondition(condition: {
  attribute: string;
  operator: string;
  values: readonly string[];
  negate: boolean;
}): string {
  const operator = operatorInWords(condition.operator, condition.negate);
  return `${condition.attribute} ${operator} ${anyOf.format(condition.values)}`;
}

/**
 * A rule's conditions as a sentence, for "If …, serve …": "the context is in segment Beta and
 * country is one of DE or AT and (plan is pro or seats is at least 10)". Empty when the rule has
 * no condition (it matches every context).
 */
export function describeRule(rule: Rule, segments: readonly Segment[]): string {
  const groups = rule.conditionGroups.map((group) => {
    const sentence = group.conditions
      .map(describeCondition)
      .join(group.operator === 'And' ? ' and ' : ' or ');
    return group.conditions.length > 1 && rule.conditionGroups.length > 1
      ? `(${sentence})`
      : sentence;
  });
  const segment = segments.find((s) => s.id === rule.userSegmentId);
  return [segment ? `the context is in segment ${segment.name ?? segment.key}` : '', ...groups]
    .filter(Boolean)
    .join(' and ');
}
