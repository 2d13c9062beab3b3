import { useState } from 'react';
import type { Flag, FlagEnvironment } from '../../api/types';
import { Labelled } from '../Field';
import { useFormMutation } from '../useFormMutation';
import { PercentageControl, percentageOf, weightOf } from './PercentageControl';
import { useTargetingWrites } from './writes';

type Strategy = FlagEnvironment['strategy'];

/**
 * What a context that no rule matches gets (journey 3): one variation, or a percentage rollout
 * with a slider and a number field per variation, to 0.001%; and the variation served while the
 * flag is off. Saved together with `PATCH …/environments/{env}`.
 */
export function Fallthrough(props: {
  flag: Flag;
  environment: string;
  configuration: FlagEnvironment;
}) {
  const { flag, environment, configuration } = props;
  const writes = useTargetingWrites();
  const [strategy, setStrategy] = useState<Strategy>(
    configuration.strategy === 'PercentageRollout' ? 'PercentageRollout' : 'SingleVariation',
  );
  const [defaultId, setDefaultId] = useState(configuration.defaultVariationId);
  const [offId, setOffId] = useState(configuration.offVariationId);
  const [percentages, setPercentages] = useState<Record<string, string>>(() =>
    Object.fromEntries(
      flag.variations.map((variation) => {
        const weight = configuration.rollout.find((w) => w.variationId === variation.id)?.weight;
        return [variation.id, percentageOf(weight ?? 0)];
      }),
    ),
  );

  const save = useFormMutation({
    mutationFn: () =>
      writes.updateSettings(
        {
          strategy,
          defaultVariationId: defaultId,
          offVariationId: offId,
          ...(strategy === 'PercentageRollout'
            ? {
                rollout: flag.variations.map((variation) => ({
                  variationId: variation.id,
                  weight: weightOf(percentages[variation.id] ?? '0'),
                })),
              }
            : {}),
        },
        'Default serve changed',
      ),
  });
  const rolloutProblem = save.problemAt('rollout');
  const total = Object.values(percentages).reduce((sum, p) => sum + (Number(p) || 0), 0);
  const canUpdate = writes.collecting
    ? writes.mayPropose
    : (configuration._actions['update']?.allowed ?? false);

  return (
    <form
      className="fallthrough"
      aria-label={`Default serve in ${environment}`}
      onSubmit={save.submit}
    >
      <Labelled label="When no rule matches, serve" error={save.problemAt('strategy')}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={strategy}
            onChange={(event) => setStrategy(event.target.value as Strategy)}
          >
            <option value="SingleVariation">one variation</option>
            <option value="PercentageRollout">a percentage rollout</option>
          </select>
        )}
      </Labelled>
      {strategy === 'SingleVariation' ? (
        <VariationSelect
          label="Default variation"
          flag={flag}
          value={defaultId}
          onChange={setDefaultId}
          error={save.problemAt('defaultVariationId')}
        />
      ) : (
        <fieldset>
          <legend>Percentage rollout (total {Number(total.toFixed(3))}%)</legend>
          {flag.variations.map((variation) => {
            const name = variation.name ?? variation.key ?? '';
            const value = percentages[variation.id] ?? '0';
            const set = (next: string) => setPercentages({ ...percentages, [variation.id]: next });
            return (
              <PercentageControl
                key={variation.id}
                label={`Percentage for ${name}`}
                sliderLabel={`Share for ${name}`}
                value={value}
                onChange={set}
              />
            );
          })}
          {/* The percentages have no one field to carry it: announced as the form's message was. */}
          {rolloutProblem && (
            <p role="alert" className="field-error">
              {rolloutProblem}
            </p>
          )}
        </fieldset>
      )}
      <VariationSelect
        label="While off, serve"
        flag={flag}
        value={offId}
        onChange={setOffId}
        error={save.problemAt('offVariationId')}
      />
      {save.message && (
        <p role="alert" className="field-error">
          {save.message}
        </p>
      )}
      <button type="submit" disabled={!canUpdate || save.isPending}>
        {writes.collecting ? 'Add default serve to pending changes' : 'Save default serve'}
      </button>
    </form>
  );
}

function VariationSelect(props: {
  label: string;
  flag: Flag;
  value: string;
  onChange: (id: string) => void;
  error?: string | undefined;
}) {
  return (
    <Labelled label={props.label} error={props.error}>
      {(id, describedBy) => (
        <select
          id={id}
          aria-describedby={describedBy}
          value={props.value}
          onChange={(event) => props.onChange(event.target.value)}
        >
          {props.flag.variations.map((variation) => (
            <option key={variation.id} value={variation.id}>
              {variation.name ?? variation.key}
            </option>
          ))}
        </select>
      )}
    </Labelled>
  );
}
