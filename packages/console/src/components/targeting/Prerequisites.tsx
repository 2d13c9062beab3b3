import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { Flag, FlagEnvironment } from '../../api/types';
import { Labelled } from '../Field';
import { useFormMutation } from '../useFormMutation';
import { useTargetingWrites } from './writes';
import { queryKeys } from '../../api/query-keys';

interface Draft {
  prerequisiteFlagKey: string;
  expectedVariationKey: string;
}

/**
 * A flag's prerequisites in one environment (journey 3): each names another flag and the
 * variation it must serve there, or this flag serves its off variation. Saved with
 * `PATCH …/environments/{env}`; the API refuses cycles and unknown variations, and its message
 * appears at the prerequisite concerned (or below the list for a cycle further down the chain).
 */
export function Prerequisites(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  configuration: FlagEnvironment;
}) {
  const { org, project, flag, environment, configuration } = props;
  const flagKey = flag.key ?? flag.id;
  const [drafts, setDrafts] = useState<Draft[]>(() =>
    configuration.prerequisites.map(({ prerequisiteFlagKey, expectedVariationKey }) => ({
      prerequisiteFlagKey,
      expectedVariationKey,
    })),
  );
  const writes = useTargetingWrites();
  const flags = useQuery({
    queryKey: queryKeys.prerequisiteChoices(org, project),
    // Read when a prerequisite is shown or being added, not for every targeting page.
    enabled: drafts.length > 0,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags', {
          params: { path: { org, project }, query: { limit: 200, sort: 'key' } },
        }),
      ),
  });
  const choices = (flags.data?.items ?? []).filter((candidate) => candidate.key !== flagKey);

  const save = useFormMutation({
    mutationFn: () => writes.updateSettings({ prerequisites: drafts }, 'Prerequisites changed'),
  });
  const canUpdate = writes.collecting
    ? writes.mayPropose
    : (configuration._actions['update']?.allowed ?? false);
  /** Whether the API's message names one prerequisite, and so shows at its row. */
  const shownAtRow = drafts.some((_, index) => save.problemAt(`prerequisites.${String(index)}`));
  const listMessage = save.message ?? (shownAtRow ? undefined : save.problemAt('prerequisites'));
  const set = (index: number, draft: Draft | null) =>
    setDrafts(drafts.flatMap((old, i) => (i !== index ? [old] : draft ? [draft] : [])));

  return (
    <form
      className="prerequisites"
      aria-label={`Prerequisites in ${environment}`}
      onSubmit={save.submit}
    >
      <h3>Prerequisites</h3>
      {drafts.length === 0 && (
        <p className="hint">None: the flag does not depend on other flags here.</p>
      )}
      {drafts.map((draft, index) => (
        <PrerequisiteRow
          key={index}
          org={org}
          project={project}
          index={index}
          draft={draft}
          choices={choices.map((choice) => choice.key)}
          onChange={(next) => set(index, next)}
          flagError={save.problemAt(`prerequisites.${String(index)}.prerequisiteFlagKey`)}
          variationError={save.problemAt(`prerequisites.${String(index)}.expectedVariationKey`)}
        />
      ))}
      {listMessage && (
        <p role="alert" className="field-error">
          {listMessage}
        </p>
      )}
      <div className="row">
        <button
          type="button"
          className="quiet"
          disabled={!canUpdate}
          onClick={() =>
            setDrafts([...drafts, { prerequisiteFlagKey: '', expectedVariationKey: '' }])
          }
        >
          Add prerequisite
        </button>
        <button type="submit" disabled={!canUpdate || save.isPending}>
          {writes.collecting ? 'Add prerequisites to pending changes' : 'Save prerequisites'}
        </button>
      </div>
    </form>
  );
}

function PrerequisiteRow(props: {
  org: string;
  project: string;
  index: number;
  draft: Draft;
  choices: string[];
  onChange: (draft: Draft | null) => void;
  flagError: string | undefined;
  variationError: string | undefined;
}) {
  const { org, project, draft, onChange } = props;
  const number = props.index + 1;
  const chosen = draft.prerequisiteFlagKey;
  const detail = useQuery({
    queryKey: queryKeys.flagDetail(org, project, chosen),
    enabled: chosen !== '',
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', {
          params: { path: { org, project, flag: chosen } },
        }),
      ),
  });
  const variations = detail.data?.variations ?? [];
  return (
    <div className="condition" role="group" aria-label={`Prerequisite ${String(number)}`}>
      <Labelled label={`Flag, prerequisite ${String(number)}`} error={props.flagError}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            aria-invalid={Boolean(props.flagError)}
            value={chosen}
            onChange={(event) =>
              onChange({ prerequisiteFlagKey: event.target.value, expectedVariationKey: '' })
            }
          >
            <option value="">Choose a flag</option>
            {/* A stored key no longer listed (archived, beyond the first page) stays choosable. */}
            {[...new Set([...(chosen ? [chosen] : []), ...props.choices])].map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      <Labelled label={`Must serve, prerequisite ${String(number)}`} error={props.variationError}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            aria-invalid={Boolean(props.variationError)}
            value={draft.expectedVariationKey}
            onChange={(event) => onChange({ ...draft, expectedVariationKey: event.target.value })}
          >
            <option value="">Choose a variation</option>
            {[
              ...new Set([
                ...(draft.expectedVariationKey ? [draft.expectedVariationKey] : []),
                ...variations.map((variation) => variation.key ?? ''),
              ]),
            ].map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      <button type="button" className="quiet" onClick={() => onChange(null)}>
        Remove prerequisite {number}
      </button>
    </div>
  );
}
