import { v7 as uuid } from 'uuid';
import type { Mutation } from '../db/mutate.js';
import type { StoredCondition, StoredConditionGroup } from '../db/schema.js';
import { diffProperties, type PropertyChange } from '../events/types.js';
import { deleteUnlessReferenced } from '../api/deletion.js';
import { insertEnvironment, updateEnvironment } from '../management/environments/queries.js';
import { defaultOffVariation } from '../management/flags/configuration.js';
import {
  deleteVariation,
  insertFlag,
  insertVariation,
  setFlagArchived,
  setFlagEnabled,
  storedMetadata,
  updateFlag,
  updateFlagConfiguration,
  updateVariation,
} from '../management/flags/queries.js';
import {
  deleteRule,
  insertRule,
  recordRuleChange,
  updateRule,
} from '../management/targeting/rule-queries.js';
import { NO_ROLLOUT, requestedRollout } from '../management/targeting/rule-schemas.js';
import { insertSegment, updateSegment } from '../management/targeting/segment-queries.js';
import { ruleInWords } from '../management/targeting/rule-words.js';
import { storedPolicy } from './environment-policy.js';
import type {
  DocumentChangeRequestPolicy,
  DocumentCondition,
  DocumentFlag,
  DocumentFlagEnvironment,
  ProjectDocument,
} from './document.js';
import {
  documentEnvironment,
  documentFlag,
  documentFlagEnvironment,
  documentSegment,
  readProjectState,
  type FlagState,
  type ProjectState,
  type RuleRow,
} from './project-state.js';
import {
  completeEnvironment,
  completeFlagEnvironment,
  completeSegment,
} from './document-defaults.js';

// The write engine's middle stage (design record 051): a document (the desired state, document.ts
// and validation.ts) against a project as stored (project-state.ts) gives the plan, a list of
// `PlannedChange`s; with a mutation the same walk writes each change through the resources' own
// write functions (flags/queries.ts, targeting/rule-queries.ts …). apply.ts runs it for flags as
// code and change requests alike.

/** What applying a document does to one item, with its path in the document. */
export interface PlannedChange {
  action: 'create' | 'update' | 'archive' | 'restore' | 'delete';
  kind: 'project' | 'environment' | 'segment' | 'flag' | 'variation' | 'configuration' | 'rule';
  /** Where the item is in the document, or (for pruned items) its key. */
  path: string;
  /** `flag`, `flag/variation`, `flag@environment`, `flag@environment#priority`. */
  key: string;
  changes?: PropertyChange[];
  /**
   * The protected environment whose change request holds this change instead of it being
   * written (an apply with a change request; design record 042, "Flags as code and agents").
   */
  proposedIn?: string;
}

/** Sorted by key, as stored and exported. */
function sortedMetadata(metadata: Record<string, string | number | boolean>) {
  return JSON.parse(storedMetadata(metadata)) as Record<string, string | number | boolean>;
}

/** A flag's own members (not its variations or configurations). */
function flagFields(f: DocumentFlag, withSalt: boolean) {
  return {
    name: f.name ?? null,
    description: f.description ?? null,
    clientSideVisible: f.clientSideVisible ?? false,
    permanent: f.permanent ?? false,
    tags: f.tags ?? [],
    metadata: sortedMetadata(f.metadata ?? {}),
    expiresAtUtc: f.expiresAtUtc ? new Date(f.expiresAtUtc).toISOString() : null,
    removalPrUrl: f.removalPrUrl ?? null,
    ...(withSalt ? { salt: f.salt } : {}),
  };
}

/** How the events of an archive or restore by an apply end their description. */
const APPLIED = ' (applied from a document)';

/** The flag columns a document decides (not its key, type, archived state or salt), as stored. */
function flagColumns(f: DocumentFlag) {
  const fields = flagFields(f, false);
  return {
    name: fields.name,
    description: fields.description,
    client_side_visible: fields.clientSideVisible ? 1 : 0,
    is_permanent: fields.permanent ? 1 : 0,
    tags: JSON.stringify(fields.tags),
    metadata: JSON.stringify(fields.metadata),
    expires_at: fields.expiresAtUtc,
    removal_pr_url: fields.removalPrUrl,
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function storedConditions(conditions: readonly DocumentCondition[]): StoredCondition[] {
  return conditions.map((c) => ({
    id: uuid(),
    attribute: c.attribute,
    operator: c.operator,
    values: c.values,
    negate: c.negate ?? false,
  }));
}

/** The reconciliation of one document with one project: records the plan, and runs it with `m`. */
export class Reconciliation {
  readonly changes: PlannedChange[] = [];
  readonly warnings: string[] = [];
  private readonly environmentIds = new Map<string, string>();
  private readonly segmentIds = new Map<string, string>();
  /** Change-request policies to set once everything else is written. */
  private readonly policies: { id: string; policy: DocumentChangeRequestPolicy }[] = [];

  constructor(
    private readonly document: ProjectDocument,
    private state: ProjectState,
    private readonly prune: boolean,
    /** Null for a dry run: the plan is recorded, nothing is written. */
    private readonly m: Mutation | null,
  ) {
    for (const e of state.environments) this.environmentIds.set(e.key, e.id);
    for (const s of state.segments) this.segmentIds.set(s.key, s.id);
  }

  async run(): Promise<void> {
    const createdEnvironments = await this.environments();
    // New environments gave every stored flag its initial configuration there: read it back.
    if (this.m && createdEnvironments)
      this.state = await readProjectState(this.m.trx, this.state.project);
    await this.segments();
    const documented = new Set<string>();
    for (const [index, flag] of (this.document.flags ?? []).entries()) {
      documented.add(flag.key);
      await this.flag(flag, index);
    }
    if (this.prune) {
      await this.archiveAbsentFlags(documented);
      await this.deleteAbsentSegments();
    }
    // Last: a policy set first would refuse the document's own writes (db/write-policy.ts).
    for (const { id, policy } of this.policies)
      if (this.m) await updateEnvironment(this.m, id, storedPolicy(policy));
  }

  private async environments(): Promise<boolean> {
    let created = false;
    for (const [index, input] of this.document.environments.entries()) {
      const path = `environments[${index}]`;
      const existing = this.state.environments.find((e) => e.key === input.key);
      const wanted = completeEnvironment(
        input,
        existing && documentEnvironment(existing).changeRequests,
      );
      if (!existing) {
        created = true;
        this.changes.push({ action: 'create', kind: 'environment', path, key: input.key });
        if (!this.m) continue;
        const row = await insertEnvironment(this.m, this.state.project, {
          key: input.key,
          name: wanted.name ?? null,
          color: wanted.color ?? null,
          sortOrder: wanted.sortOrder ?? 0,
          critical: wanted.critical ?? false,
        });
        if (wanted.changeRequests?.required)
          this.policies.push({ id: row.id, policy: wanted.changeRequests });
        this.environmentIds.set(row.key, row.id);
        continue;
      }
      const changes = diffProperties(documentEnvironment(existing), wanted);
      if (changes.length === 0) continue;
      this.changes.push({ action: 'update', kind: 'environment', path, key: input.key, changes });
      if (!this.m) continue;
      await updateEnvironment(this.m, existing.id, {
        name: wanted.name ?? null,
        color: wanted.color ?? null,
        sort_order: wanted.sortOrder ?? 0,
        critical: wanted.critical ? 1 : 0,
      });
      if (wanted.changeRequests && changes.some((c) => c.property === 'ChangeRequests'))
        this.policies.push({ id: existing.id, policy: wanted.changeRequests });
      await this.m.emit({
        type: 'environment.updated',
        project: this.state.project,
        environment: existing,
        entity: { type: 'environment', id: existing.id, key: existing.key },
        changes,
        description: `Environment "${existing.key}" updated`,
      });
    }
    return created;
  }

  private async segments(): Promise<void> {
    for (const [index, input] of (this.document.segments ?? []).entries()) {
      const wanted = completeSegment(input);
      const path = `segments[${index}]`;
      const existing = this.state.segments.find((s) => s.key === input.key);
      const changes = existing ? diffProperties(documentSegment(existing), wanted) : [];
      if (existing && changes.length === 0) continue;
      this.changes.push({
        action: existing ? 'update' : 'create',
        kind: 'segment',
        path,
        key: input.key,
        ...(existing ? { changes } : {}),
      });
      const m = this.m;
      if (!m) continue;
      const values = {
        name: wanted.name ?? null,
        description: wanted.description ?? null,
        conditions: JSON.stringify(storedConditions(wanted.conditions ?? [])),
        condition_logic: wanted.conditionLogic ?? 'And',
      };
      if (!existing) {
        const created = await insertSegment(m, this.state.project, { key: input.key, ...values });
        this.segmentIds.set(input.key, created.id);
        continue;
      }
      await updateSegment(m, existing, values);
      await m.emit({
        type: 'segment.updated',
        project: this.state.project,
        entity: { type: 'segment', id: existing.id, key: existing.key },
        changes,
        description: `Segment "${input.key}" updated`,
      });
    }
  }

  private async flag(input: DocumentFlag, index: number): Promise<void> {
    const path = `flags[${index}]`;
    const existing = this.state.flags.find((f) => f.row.key === input.key);
    if (!existing) {
      this.changes.push({ action: 'create', kind: 'flag', path, key: input.key });
      if (!this.m) return;
      const created = await this.createFlagFrom(input);
      await this.configure(input, path, created, false);
      return;
    }
    const segmentKeys = new Map(this.state.segments.map((s) => [s.id, s.key]));
    const before = documentFlag(existing, this.state.environments, segmentKeys);
    const changes = diffProperties(
      flagFields(before, input.salt !== undefined),
      flagFields(input, input.salt !== undefined),
    );
    if (changes.length > 0) {
      this.changes.push({ action: 'update', kind: 'flag', path, key: input.key, changes });
      if (this.m) await this.updateFlagFrom(input, existing, changes);
    }
    const archived = input.archived ?? false;
    if (archived !== before.archived) {
      this.changes.push({
        action: archived ? 'archive' : 'restore',
        kind: 'flag',
        path: `${path}.archived`,
        key: input.key,
      });
      if (this.m)
        await setFlagArchived(this.m, this.state.project, existing.row, archived, APPLIED);
    }
    const removed = await this.variations(input, path, existing);
    await this.configure(input, path, existing, true);
    if (this.m) {
      for (const variation of removed)
        await deleteVariation(this.m, this.state.project, existing.row, variation);
    }
  }

  /** Inserts a new flag, its variations and its initial configuration in every environment. */
  private async createFlagFrom(input: DocumentFlag): Promise<FlagState> {
    const m = this.m;
    if (!m) throw new Error('createFlagFrom without a mutation');
    const created = await insertFlag(
      m,
      this.state.project,
      {
        key: input.key,
        type: input.type,
        is_archived: input.archived ? 1 : 0,
        owner_user_id: null,
        ...flagColumns(input),
        salt: input.salt,
      },
      input.variations.map((v) => ({
        key: v.key,
        name: v.name ?? null,
        value: v.value,
        description: v.description ?? null,
      })),
      // The schema requires a variation.
      defaultOffVariation(input.type, input.variations)?.key ?? '',
    );
    return {
      row: created.row,
      variations: created.variations,
      configurations: new Map(created.configurations.map((c) => [c.environment_id, c])),
      rules: new Map(),
    };
  }

  private async updateFlagFrom(
    input: DocumentFlag,
    existing: FlagState,
    changes: PropertyChange[],
  ): Promise<void> {
    const m = this.m;
    if (!m) return;
    await updateFlag(m, existing.row.id, {
      ...flagColumns(input),
      ...(input.salt !== undefined ? { salt: input.salt } : {}),
    });
    await m.emit({
      type: 'flag.updated',
      project: this.state.project,
      entity: { type: 'flag', id: existing.row.id, key: existing.row.key },
      changes,
      description: `Flag "${input.key}" updated`,
    });
    // Of these members, SDKs receive client visibility, metadata and (through bucketing) the salt.
    if (changes.some((c) => ['ClientSideVisible', 'Metadata', 'Salt'].includes(c.property)))
      await m.touchFlag(existing.row, undefined, 'describes');
  }

  /**
   * Creates and updates the flag's variations (their order is the document's) and returns those
   * the document leaves out, deleted once no configuration serves them any more.
   */
  private async variations(input: DocumentFlag, path: string, existing: FlagState) {
    const m = this.m;
    for (const [sortOrder, variation] of input.variations.entries()) {
      const at = `${path}.variations[${sortOrder}]`;
      const key = `${input.key}/${variation.key}`;
      const stored = existing.variations.find((v) => v.key === variation.key);
      const wanted = {
        name: variation.name ?? null,
        value: variation.value,
        description: variation.description ?? null,
        sortOrder,
      };
      if (!stored) {
        this.changes.push({ action: 'create', kind: 'variation', path: at, key });
        if (!m) continue;
        const row = await insertVariation(m, this.state.project, existing.row, {
          key: variation.key,
          ...wanted,
        });
        existing.variations.push(row);
        continue;
      }
      const changes = diffProperties(
        {
          name: stored.name,
          value: stored.value,
          description: stored.description,
          sortOrder: existing.variations.indexOf(stored),
        },
        wanted,
      );
      if (changes.length === 0) continue;
      this.changes.push({ action: 'update', kind: 'variation', path: at, key, changes });
      if (!m) continue;
      const { name, value, description } = wanted;
      await updateVariation(
        m,
        this.state.project,
        existing.row,
        stored,
        { name, value, description, sort_order: sortOrder },
        changes,
      );
    }
    const kept = new Set(input.variations.map((v) => v.key));
    const removed = existing.variations.filter((v) => !kept.has(v.key));
    for (const variation of removed)
      this.changes.push({
        action: 'delete',
        kind: 'variation',
        path: `${path}.variations`,
        key: `${input.key}/${variation.key}`,
      });
    return removed;
  }

  /** Brings the flag's configuration in each environment the document names to what it says. */
  private async configure(
    input: DocumentFlag,
    path: string,
    flag: FlagState,
    record: boolean,
  ): Promise<void> {
    const variationIds = new Map(flag.variations.map((v) => [v.key, v.id]));
    const variationKeys = new Map(flag.variations.map((v) => [v.id, v.key]));
    const segmentKeys = new Map([...this.segmentIds].map(([key, id]) => [id, key]));
    for (const [environmentKey, configuration] of Object.entries(input.environments ?? {})) {
      const at = `${path}.environments.${environmentKey}`;
      const environmentId = this.environmentIds.get(environmentKey);
      const stored = environmentId ? flag.configurations.get(environmentId) : undefined;
      const wanted = completeFlagEnvironment(configuration);
      if (!environmentId || !stored) {
        // Only in a dry run: the environment is new, its configuration not made yet.
        if (record)
          this.changes.push({
            action: 'update',
            kind: 'configuration',
            path: at,
            key: `${input.key}@${environmentKey}`,
          });
        continue;
      }
      const rules = flag.rules.get(environmentId) ?? [];
      const before = documentFlagEnvironment(stored, rules, variationKeys, segmentKeys);
      const { enabled: enabledBefore, rules: rulesBefore, ...settingsBefore } = before;
      const { enabled, rules: wantedRules, ...settings } = wanted;
      const settingChanges = diffProperties(settingsBefore, settings);
      const m = this.m;
      if (settingChanges.length > 0) {
        if (record)
          this.changes.push({
            action: 'update',
            kind: 'configuration',
            path: at,
            key: `${input.key}@${environmentKey}`,
            changes: settingChanges,
          });
        if (m) {
          await m.touchFlag(flag.row, [environmentId]);
          const id = (key: string) => variationIds.get(key) ?? '';
          await updateFlagConfiguration(m, flag.row.id, environmentId, {
            default_variation_id: id(wanted.defaultVariation),
            off_variation_id: id(wanted.offVariation),
            strategy: wanted.strategy ?? 'SingleVariation',
            rollout: JSON.stringify(
              (wanted.rollout ?? []).map((w) => ({
                variationId: id(w.variation),
                weight: w.weight,
              })),
            ),
            prerequisites: JSON.stringify(
              (wanted.prerequisites ?? []).map((p) => ({
                prerequisiteFlagKey: p.flag,
                expectedVariationKey: p.variation,
              })),
            ),
          });
          await m.emit({
            type: 'flag.environment_config.updated',
            project: this.state.project,
            environment: { id: environmentId, key: environmentKey },
            entity: { type: 'flag', id: flag.row.id, key: flag.row.key },
            child: { type: 'flag_environment_config', id: environmentId },
            changes: settingChanges,
            description: `Configuration of flag "${input.key}" in "${environmentKey}" updated`,
          });
        }
      }
      if (enabled !== enabledBefore) {
        if (record)
          this.changes.push({
            action: 'update',
            kind: 'configuration',
            path: `${at}.enabled`,
            key: `${input.key}@${environmentKey}`,
            changes: [{ property: 'IsEnabled', from: String(enabledBefore), to: String(enabled) }],
          });
        if (m)
          await setFlagEnabled(
            m,
            this.state.project,
            flag.row,
            { id: environmentId, key: environmentKey },
            { from: enabledBefore, to: enabled },
          );
      }
      await this.rules(input, at, flag, environmentId, environmentKey, {
        before: rulesBefore ?? [],
        wanted: wantedRules ?? [],
        stored: rules,
        variationIds,
        record,
      });
    }
  }

  /** Rules by position: the document's n-th rule is the stored rule of priority n. */
  private async rules(
    input: DocumentFlag,
    at: string,
    flag: FlagState,
    environmentId: string,
    environmentKey: string,
    rules: {
      before: NonNullable<DocumentFlagEnvironment['rules']>;
      wanted: NonNullable<DocumentFlagEnvironment['rules']>;
      stored: RuleRow[];
      variationIds: Map<string, string>;
      record: boolean;
    },
  ): Promise<void> {
    const m = this.m;
    const count = Math.max(rules.before.length, rules.wanted.length);
    for (let index = 0; index < count; index++) {
      const before = rules.before[index];
      const wanted = rules.wanted[index];
      const stored = rules.stored[index];
      const priority = index + 1;
      const key = `${input.key}@${environmentKey}#${priority}`;
      const path = `${at}.rules[${index}]`;
      if (before && wanted && same(before, wanted)) continue;
      const action = !before ? 'create' : !wanted ? 'delete' : 'update';
      const changes = before && wanted ? diffProperties(before, wanted) : undefined;
      if (rules.record)
        this.changes.push({
          action,
          kind: 'rule',
          path: wanted ? path : `${at}.rules`,
          key,
          ...(changes ? { changes } : {}),
        });
      if (!m) continue;
      await m.touchFlag(flag.row, [environmentId]);
      const values = wanted && {
        description: wanted.description ?? null,
        variation_id: rules.variationIds.get(wanted.variation) ?? '',
        ...(requestedRollout({ rolloutWeight: wanted.rolloutWeight ?? null }) ?? NO_ROLLOUT),
        segment_id: wanted.segment ? (this.segmentIds.get(wanted.segment) ?? null) : null,
        condition_groups: JSON.stringify(
          (wanted.conditionGroups ?? []).map((group): StoredConditionGroup => ({
            id: uuid(),
            operator: group.operator ?? 'And',
            conditions: storedConditions(group.conditions),
          })),
        ),
      };
      let ruleId: string;
      if (stored && values) {
        ruleId = stored.id;
        await updateRule(m, stored.id, values);
      } else if (values) {
        const target = { flagId: flag.row.id, environmentId, priority };
        ruleId = (await insertRule(m, target, values)).id;
      } else if (stored) {
        ruleId = stored.id;
        await deleteRule(m, stored);
      } else continue;
      await recordRuleChange(
        m,
        `flag.rule.${action === 'create' ? 'created' : action === 'delete' ? 'deleted' : 'updated'}`,
        {
          project: this.state.project,
          environment: { id: environmentId, key: environmentKey },
          flag: flag.row,
          ruleId,
        },
        `Rule ${priority} of flag "${input.key}" in "${environmentKey}" ${action === 'create' ? 'added' : action === 'delete' ? 'removed' : 'updated'}${
          action === 'create' && values
            ? `: ${ruleInWords({
                description: values.description,
                segmentKey: wanted.segment ?? null,
                conditionGroups: JSON.parse(values.condition_groups) as StoredConditionGroup[],
              })}`
            : ''
        }`,
        changes,
      );
    }
  }

  private async archiveAbsentFlags(documented: ReadonlySet<string>): Promise<void> {
    for (const flag of this.state.flags) {
      if (documented.has(flag.row.key) || flag.row.is_archived === 1) continue;
      this.changes.push({ action: 'archive', kind: 'flag', path: flag.row.key, key: flag.row.key });
      if (this.m) await setFlagArchived(this.m, this.state.project, flag.row, true, APPLIED);
    }
  }

  /** Segments the document leaves out are deleted, unless a rule will still use them. */
  private async deleteAbsentSegments(): Promise<void> {
    const documented = new Set((this.document.segments ?? []).map((s) => s.key));
    const used = new Map<string, string>();
    const documentedFlags = new Map((this.document.flags ?? []).map((f) => [f.key, f]));
    for (const flag of this.state.flags) {
      const input = documentedFlags.get(flag.row.key);
      for (const environment of this.state.environments) {
        if (input?.environments?.[environment.key]) continue;
        for (const rule of flag.rules.get(environment.id) ?? [])
          if (rule.segment_id) used.set(rule.segment_id, `${flag.row.key} (${environment.key})`);
      }
    }
    for (const segment of this.state.segments) {
      if (documented.has(segment.key)) continue;
      const user = used.get(segment.id);
      if (user) {
        this.warnings.push(
          `Segment "${segment.key}" is not in the document but is kept: the rules of flag ${user} still use it.`,
        );
        continue;
      }
      this.changes.push({ action: 'delete', kind: 'segment', path: segment.key, key: segment.key });
      if (this.m)
        await deleteUnlessReferenced(
          this.m,
          { kind: 'segment', id: segment.id, key: segment.key, project: this.state.project },
          () => Promise.resolve(null),
        );
    }
  }
}
