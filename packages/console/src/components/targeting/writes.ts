import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext } from 'react';
import { api, unwrap } from '../../api/client';
import type { paths } from '../../api/schema';
import type { Rule } from '../../api/types';
import type { PendingChanges } from '../change-requests/pending';
import { queryKeys } from '../../api/query-keys';

type EnvironmentPath = '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}';
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/** What targeting's forms send for the flag's settings in the environment (`PATCH …/{env}`). */
export type SettingsChange = Body<EnvironmentPath, 'patch'>;
/** A rule as the rule editor sends it (`POST …/rules`, `PUT …/rules/{rule}`). */
export type RuleChange = Body<`${EnvironmentPath}/rules`, 'post'>;

/**
 * The writes that targeting's forms make (journey 3). In an environment that requires change
 * requests they are collected as pending changes instead of saved (design record 043); the
 * forms are the same either way.
 */
export interface TargetingWrites {
  /** True when the writes are collected for review rather than saved. */
  collecting: boolean;
  /** While collecting: whether the caller may open a change request (`_actions.create`). */
  mayPropose: boolean;
  updateSettings(change: SettingsChange, edit: string): Promise<unknown>;
  saveRule(rule: Rule | null, change: RuleChange, label: string): Promise<unknown>;
  deleteRule(rule: Rule, label: string): Promise<unknown>;
  reorderRules(ruleIds: string[]): Promise<unknown>;
  toggle(enabled: boolean): Promise<unknown>;
}

export const TargetingWritesContext = createContext<TargetingWrites | null>(null);

/** The writes of the environment shown; outside a provider, direct saves are an error. */
export function useTargetingWrites(): TargetingWrites {
  const writes = useContext(TargetingWritesContext);
  if (!writes) throw new Error('useTargetingWrites outside <TargetingWritesContext>');
  return writes;
}

interface Place {
  org: string;
  project: string;
  flag: string;
  env: string;
}

/** Writes saved at once through the management API, then the flag's queries re-read. */
export function useDirectWrites(path: Place): TargetingWrites {
  const queryClient = useQueryClient();
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({
        queryKey: queryKeys.flag(path.org, path.project, path.flag),
      }),
      queryClient.invalidateQueries({ queryKey: queryKeys.flags(path.org, path.project) }),
    ]);
  const then = <T>(call: Promise<T>) =>
    call.finally(() => {
      void refresh();
    });
  const rules = '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules';
  return {
    collecting: false,
    mayPropose: false,
    updateSettings: (body) =>
      then(
        unwrap(
          api.PATCH('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}', {
            params: { path },
            body,
          }),
        ),
      ),
    saveRule: (rule, body) =>
      then(
        rule
          ? unwrap(
              api.PUT(`${rules}/{rule}`, { params: { path: { ...path, rule: rule.id } }, body }),
            )
          : unwrap(api.POST(rules, { params: { path }, body })),
      ),
    deleteRule: (rule) =>
      then(unwrap(api.DELETE(`${rules}/{rule}`, { params: { path: { ...path, rule: rule.id } } }))),
    reorderRules: (ruleIds) =>
      then(unwrap(api.PUT(`${rules}/reorder`, { params: { path }, body: { ruleIds } }))),
    toggle: (enabled) =>
      then(
        unwrap(
          api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle', {
            params: { path },
            body: { enabled },
          }),
        ),
      ),
  };
}

type Targeting = Omit<PendingChanges, 'edits'>;

/**
 * Writes collected as pending changes on top of `stored` (the targeting as the API reads it
 * now): each resolves at once, as a save would, and adds one line to the pending list.
 */
export function collectingWrites(
  stored: Targeting,
  mayPropose: boolean,
  record: (from: Targeting, edit: string, change: (current: Targeting) => Targeting) => void,
): TargetingWrites {
  const apply = (edit: string, change: (current: Targeting) => Targeting) => {
    record(stored, edit, change);
    return Promise.resolve();
  };
  return {
    collecting: true,
    mayPropose,
    updateSettings: (body, edit) =>
      apply(edit, (current) => ({
        ...current,
        settings: {
          ...current.settings,
          ...(body.strategy === undefined ? {} : { strategy: body.strategy }),
          ...(body.defaultVariationId === undefined
            ? {}
            : { defaultVariationId: body.defaultVariationId }),
          ...(body.offVariationId === undefined ? {} : { offVariationId: body.offVariationId }),
          ...(body.rollout === undefined ? {} : { rollout: body.rollout }),
          ...(body.prerequisites === undefined ? {} : { prerequisites: body.prerequisites }),
        },
      })),
    saveRule: (rule, body, label) =>
      apply(rule ? `${label} changed` : 'Rule added', (current) => {
        const saved = ruleOf(rule, body, current.rules.length);
        return {
          ...current,
          rules: rule
            ? current.rules.map((r) => (r.id === rule.id ? saved : r))
            : [...current.rules, saved],
        };
      }),
    deleteRule: (rule, label) =>
      apply(`${label} deleted`, (current) => ({
        ...current,
        rules: current.rules.filter((r) => r.id !== rule.id),
      })),
    reorderRules: (ruleIds) =>
      apply('Rules reordered', (current) => ({
        ...current,
        rules: ruleIds.flatMap((id) => current.rules.filter((r) => r.id === id)),
      })),
    toggle: (enabled) =>
      apply(enabled ? 'Turned on' : 'Turned off', (current) => ({
        ...current,
        settings: { ...current.settings, isEnabled: enabled },
      })),
  };
}

/** A rule as the rules list shows it, made from what the editor sent. */
function ruleOf(rule: Rule | null, body: RuleChange, position: number): Rule {
  const weight = body.rolloutWeight ?? null;
  return {
    id: rule?.id ?? `new-${crypto.randomUUID()}`,
    priority: rule?.priority ?? position,
    description: body.description ?? null,
    variationId: body.variationId,
    rolloutWeight: weight,
    rolloutPercentage: weight === null ? null : Math.floor(weight / 1000),
    userSegmentId: body.userSegmentId ?? null,
    conditionGroups: (body.conditionGroups ?? []).map((group, g) => ({
      id: `group-${g}`,
      operator: group.operator === 'Or' ? 'Or' : 'And',
      conditions: group.conditions.map((condition, c) => ({
        id: `condition-${g}-${c}`,
        attribute: condition.attribute ?? '',
        operator: condition.operator ?? '',
        values: condition.values ?? [],
        negate: condition.negate ?? false,
      })),
    })),
  };
}
