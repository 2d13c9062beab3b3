import { Slider } from 'radix-ui';
import { Labelled } from '../Field';

/** Rollout weights are thousandths of a percent on the wire (0–100000): 0.001% steps. */
export const WEIGHT_PER_PERCENT = 1000;

/** A percentage as typed in the number field (`"12.5"`) as an API weight (`12500`). */
export function weightOf(percentage: string): number {
  return Math.round(Number(percentage) * WEIGHT_PER_PERCENT);
}

/** An API weight (`12500`) as the percentage the number field shows (`"12.5"`). */
export function percentageOf(weight: number): string {
  return String(weight / WEIGHT_PER_PERCENT);
}

/**
 * A share of contexts, 0–100% in 0.001% steps: a Radix slider and a number field showing the
 * same value (the slider for dragging, the field for an exact figure or keyboard entry).
 * `value` is the field's text, kept as typed.
 */
export function PercentageControl(props: {
  label: string;
  sliderLabel: string;
  value: string;
  onChange: (value: string) => void;
  hint?: string | undefined;
  error?: string | null | undefined;
  /**
   * What an empty field means (a rule's rollout: 100, everyone); the slider then sits there and
   * the field says so, rather than the slider reading 0%.
   */
  emptyMeans?: number;
}) {
  const { label, sliderLabel, value, onChange, emptyMeans } = props;
  const empty = value.trim() === '' && emptyMeans !== undefined;
  return (
    <div className="rollout-row">
      <Slider.Root
        className="slider"
        min={0}
        max={100}
        step={0.001}
        value={[empty ? emptyMeans : Number(value) || 0]}
        onValueChange={([next]) => onChange(String(next ?? 0))}
      >
        <Slider.Track className="slider-track">
          <Slider.Range className="slider-range" />
        </Slider.Track>
        <Slider.Thumb className="slider-thumb" aria-label={sliderLabel} />
      </Slider.Root>
      <Labelled label={label} hint={props.hint} error={props.error}>
        {(id, describedBy) => (
          <input
            id={id}
            type="number"
            min={0}
            max={100}
            step={0.001}
            aria-describedby={describedBy}
            aria-invalid={Boolean(props.error)}
            value={value}
            placeholder={empty ? `${emptyMeans} (all)` : undefined}
            onChange={(event) => onChange(event.target.value)}
          />
        )}
      </Labelled>
    </div>
  );
}
