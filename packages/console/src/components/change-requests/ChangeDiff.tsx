import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import type { Change, Segment } from '../../api/types';
import { durationWords } from '../release-plan/time';
import type { ReleaseGuard } from '../release-plan/types';
import { percentageOf } from '../targeting/PercentageControl';
import { describeCondition } from '../targeting/sentence';
import { asConfiguration, type ConfigurationDocument, type DocumentRule } from './configuration';
import { queryKeys } from '../../api/query-keys';

/**
 * One change of a request's diff as the API reads it: what the target is now (`before`, null when
 * gone), what it will be (`after`), and whether its revision moved since the change was written.
 */
export interface DiffEntry {
  target?: string;
  before: unknown;
  after: unknown;
  revision?: number | null;
  baseRevision?: number | null;
  conflict: boolean;
}

/** The fields of a change the console reads (change-requests.md section 2). */
interface ChangeFields {
  kind: string;
  flagKey?: string;
  segmentKey?: string;
  baseRevision?: number;
  configuration?: unknown;
  definition?: unknown;
  variations?: unknown;
  plan?: ProposedPlan;
}

/** A release plan as a `releasePlan` change carries it (change-requests.md section 4). */
interface ProposedPlan {
  variation: string;
  steps: { percentage: number; after: string }[];
  /** As proposed: `minimumUsers` and `confidence` may be left to their defaults. */
  guard?: Omit<ReleaseGuard, 'minimumUsers' | 'confidence'> &
    Partial<Pick<ReleaseGuard, 'minimumUsers' | 'confidence'>>;
}

/** What a change targets, in words: "Flag new-checkout", "Segment beta-testers". */
export function changeTarget(change: Change): string {
  const { kind, flagKey = '', segmentKey = '' } = change as ChangeFields;
  if (kind === 'flag') return `Flag ${flagKey}`;
  if (kind === 'segment') return `Segment ${segmentKey}`;
  if (kind === 'variations') return `Variations of ${flagKey}`;
  if (kind === 'releasePlan') return `Release plan of ${flagKey}`;
  return `${kind} ${flagKey || segmentKey}`.trim();
}

/**
 * One change before and after, side by side (design record 043): a flag's configuration as
 * rows of words (on/off, default serve, off variation, prerequisites, each rule as a sentence),
 * each row marked when it changes; a change the console cannot read as a configuration is shown
 * as its JSON. A conflict (the target changed since the request was written, or is gone) is
 * said above the table.
 */
export function ChangeDiff(props: {
  org: string;
  project: string;
  index: number;
  change: Change;
  entry: DiffEntry | undefined;
  segments: readonly Segment[];
  /**
   * Whether the request was applied: its diff is then what it changed, kept as it was when
   * applied (a later change to the target is no conflict of it).
   */
  applied?: boolean;
}) {
  const { org, project, entry } = props;
  const change = props.change as ChangeFields;
  const flagKey = change.flagKey ?? '';
  // The flag's variations give their names ("Off" for the key "false"); the page reads it anyway.
  const flag = useQuery({
    queryKey: queryKeys.flagDetail(org, project, flagKey),
    enabled: (change.kind === 'flag' || change.kind === 'releasePlan') && flagKey !== '',
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', {
          params: { path: { org, project, flag: flagKey } },
        }),
      ),
  });
  const names: Names = {
    variation: (key) => {
      const variation = flag.data?.variations.find((v) => v.key === key);
      const name = variation?.name ?? key;
      // A Json, String or Number flag's variations are read by their values, not "v1 → v2".
      return flag.data?.type === 'Boolean' || variation?.value == null
        ? name
        : `${name}: ${variation.value}`;
    },
    segment: (key) => props.segments.find((s) => s.key === key)?.name ?? key,
  };
  const heading = `Change ${props.index + 1}: ${changeTarget(props.change)}`;
  const before = entry?.before ?? null;
  const after = entry?.after ?? change.configuration ?? change.definition ?? change.variations;
  const beforeConfiguration = asConfiguration(before);
  const afterConfiguration = asConfiguration(after);
  const rows = change.plan
    ? planRows(before, change.plan, names)
    : afterConfiguration && (beforeConfiguration || before === null)
      ? configurationRows(beforeConfiguration, afterConfiguration, names)
      : [{ label: 'Value', before: json(before), after: json(after) }];
  return (
    <section className="change" aria-label={heading}>
      <h3>{heading}</h3>
      {entry?.conflict && !props.applied && (
        <p className="conflict" role="note">
          <strong>Conflict:</strong>{' '}
          {before === null
            ? 'the target no longer exists.'
            : `it changed since this request was written (revision ${String(
                entry.baseRevision ?? change.baseRevision ?? '?',
              )}, now ${String(entry.revision ?? '?')}): applying is refused until the author rewrites the change.`}
        </p>
      )}
      <table className="cr-diff" aria-label={`${heading}, before and after`}>
        <thead>
          <tr>
            <th scope="col">Setting</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const changed = row.before !== row.after;
            return (
              <tr key={row.label} className={changed ? 'changed' : undefined}>
                <th scope="row">
                  {row.label}
                  {changed && <span className="badge changed-mark">changed</span>}
                </th>
                <td>{row.before}</td>
                <td>{row.after}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

function json(value: unknown): string {
  return value === null || value === undefined ? '—' : JSON.stringify(value, null, 2);
}

/** Names for the keys a configuration holds: a variation's name, a segment's name. */
interface Names {
  variation: (key: string) => string;
  segment: (key: string) => string;
}

interface Row {
  label: string;
  before: string;
  after: string;
}

/** The configuration's settings in words, row by row; a side that does not exist reads "—". */
function configurationRows(
  before: ConfigurationDocument | null,
  after: ConfigurationDocument,
  names: Names,
): Row[] {
  const side = (
    document: ConfigurationDocument | null,
    read: (d: ConfigurationDocument) => string,
  ) => (document ? read(document) : '—');
  const row = (label: string, read: (d: ConfigurationDocument) => string): Row => ({
    label,
    before: side(before, read),
    after: read(after),
  });
  const rules = Math.max(before?.rules?.length ?? 0, after.rules?.length ?? 0);
  return [
    row('On or off', (d) => (d.enabled ? 'On' : 'Off')),
    row('When no rule matches', (d) => defaultServe(d, names)),
    row('While off, serve', (d) => names.variation(d.offVariation)),
    row('Prerequisites', (d) =>
      d.prerequisites?.length
        ? d.prerequisites.map((p) => `${p.flag} serves ${p.variation}`).join('; ')
        : 'None',
    ),
    ...Array.from({ length: rules }, (_, index) =>
      row(`Rule ${index + 1}`, (d) => {
        const rule = d.rules?.[index];
        return rule ? ruleSentence(rule, names) : 'No rule';
      }),
    ),
  ];
}

/**
 * A proposed release plan in words: the default serve it moves from (the diff's `before`) and to,
 * its steps with their waits, and its guard.
 */
function planRows(before: unknown, plan: ProposedPlan, names: Names): Row[] {
  const fallthrough = (before as { fallthrough?: PlanFallthrough } | null)?.fallthrough;
  const from = !fallthrough
    ? '—'
    : fallthrough.rollout
      ? `a percentage rollout: ${fallthrough.rollout
          .map((w) => `${names.variation(w.variation)} ${percentageOf(w.weight)}%`)
          .join(', ')}`
      : names.variation(fallthrough.variation ?? '');
  const steps = plan.steps
    .map((step, index) =>
      index === 0 && step.after === 'PT0S'
        ? `${step.percentage}% at once`
        : `${step.percentage}% after ${durationWords(step.after)}`,
    )
    .join(', then ');
  const guard = plan.guard
    ? `${plan.guard.metric}, ${plan.guard.direction === 'lower_is_better' ? 'lower' : 'higher'} is better; ` +
      `from ${plan.guard.minimumUsers ?? 500} users per side at confidence ${plan.guard.confidence ?? 0.95}; ` +
      `on a regression ${plan.guard.action === 'pause' ? 'pause' : 'roll back'}`
    : 'None';
  return [
    {
      label: 'When no rule matches',
      before: from,
      after: `released to ${names.variation(plan.variation)} in steps`,
    },
    { label: 'Steps', before: '—', after: steps },
    { label: 'Guard', before: '—', after: guard },
  ];
}

/** The default serve a release plan moves from, as the diff's `before` names it. */
interface PlanFallthrough {
  variation?: string;
  rollout?: { variation: string; weight: number }[];
}

function defaultServe(document: ConfigurationDocument, names: Names): string {
  if (document.strategy === 'PercentageRollout' && document.rollout?.length)
    return `a percentage rollout: ${document.rollout
      .map((w) => `${names.variation(w.variation)} ${percentageOf(w.weight)}%`)
      .join(', ')}`;
  return names.variation(document.defaultVariation);
}

/** A document rule as the rules list reads one: "If country is one of DE or AT, serve on". */
function ruleSentence(rule: DocumentRule, names: Names): string {
  const groups = rule.conditionGroups ?? [];
  const conditions = groups.map((group) => {
    const sentence = group.conditions
      .map((c) => describeCondition({ ...c, negate: c.negate ?? false }))
      .join(group.operator === 'Or' ? ' or ' : ' and ');
    return group.conditions.length > 1 && groups.length > 1 ? `(${sentence})` : sentence;
  });
  const segment = rule.segment ? names.segment(rule.segment) : null;
  const condition = [segment ? `the context is in segment ${segment}` : '', ...conditions]
    .filter(Boolean)
    .join(' and ');
  const rollout =
    rule.rolloutWeight === null || rule.rolloutWeight === undefined
      ? ''
      : ` to ${percentageOf(rule.rolloutWeight)}%`;
  const description = rule.description ? ` (${rule.description})` : '';
  return `If ${condition || 'any context'}, serve ${names.variation(rule.variation)}${rollout}${description}`;
}
