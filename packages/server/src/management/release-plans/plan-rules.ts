import { parse as parseIsoDuration, type Duration } from 'tinyduration';
import { invalidField } from '../../errors.js';

/** Rollout weights are thousandths of a percent (100 000 = 100%): the precision of a step. */
export const WEIGHT_PER_PERCENT = 1_000;
export const FULL_WEIGHT = 100 * WEIGHT_PER_PERCENT;
/** The most steps one plan holds (bounded work per request, design record 035). */
export const MAX_STEPS = 50;

/** One step as a client writes it (spec: change requests, section 4). */
export interface StepInput {
  percentage: number;
  after: string;
}

/** The guard as stored, defaults filled in (spec section 5). */
export interface Guard {
  /** The `Custom` event key watched. */
  metric: string;
  /** The catalogue metric it was named by, if any. */
  metricKey?: string;
  kind: 'rate';
  direction: 'lower_is_better' | 'higher_is_better';
  minimumUsers: number;
  confidence: number;
  action: 'rollback' | 'pause';
}

export const GUARD_DEFAULTS = {
  kind: 'rate',
  direction: 'lower_is_better',
  minimumUsers: 500,
  confidence: 0.95,
  action: 'rollback',
} as const;

const MS = {
  weeks: 7 * 86_400_000,
  days: 86_400_000,
  hours: 3_600_000,
  minutes: 60_000,
  seconds: 1_000,
} as const;

/**
 * The length of an ISO 8601 duration in milliseconds (`PT1H`, `P1D`, `P1W`, `PT0S`, `PT1.5H`),
 * parsed by `tinyduration`. Years and months are refused: their length depends on the calendar,
 * and a step's wait must mean the same in every time zone and month.
 * @returns the milliseconds, or a sentence saying what is wrong
 */
export function durationMs(text: string): number | string {
  let duration: Duration;
  try {
    duration = parseIsoDuration(text);
  } catch {
    return 'must be an ISO 8601 duration such as "PT0S", "PT30M", "PT1H" or "P2D"';
  }
  if (duration.negative) return 'must not be negative';
  if ((duration.years ?? 0) !== 0 || (duration.months ?? 0) !== 0)
    return 'must not use years or months (their length varies); use days or weeks';
  let total = 0;
  for (const unit of Object.keys(MS) as (keyof typeof MS)[])
    total += (duration[unit] ?? 0) * MS[unit];
  return Math.round(total);
}

/** A percentage as rollout weight, or null when it is finer than 0.001. */
export function percentageWeight(percentage: number): number | null {
  const weight = Math.round(percentage * WEIGHT_PER_PERCENT);
  return Math.abs(weight - percentage * WEIGHT_PER_PERCENT) < 1e-6 ? weight : null;
}

/**
 * Checks a plan's steps (spec section 4): 1–{@link MAX_STEPS} steps, percentages rising strictly
 * from above 0 to exactly 100 with a precision of 0.001, waits as ISO 8601 durations that are not
 * negative.
 * @returns each step's wait in milliseconds
 * @throws ApiError 400 `validation_failed` naming the step (`steps.2.percentage`, `steps.0.after`)
 */
export function checkSteps(steps: readonly StepInput[]): number[] {
  if (steps.length === 0) throw invalidField('steps', 'must hold at least one step');
  if (steps.length > MAX_STEPS) throw invalidField('steps', `must hold at most ${MAX_STEPS} steps`);
  let previous = 0;
  return steps.map((step, index) => {
    const at = `steps.${index}`;
    const weight = percentageWeight(step.percentage);
    if (weight === null)
      throw invalidField(`${at}.percentage`, 'must have at most three decimals (0.001%)');
    if (weight <= previous)
      throw invalidField(
        `${at}.percentage`,
        index === 0
          ? 'must be above 0'
          : `must be above the previous step's ${previous / WEIGHT_PER_PERCENT}`,
      );
    if (weight > FULL_WEIGHT) throw invalidField(`${at}.percentage`, 'must be at most 100');
    if (index === steps.length - 1 && weight !== FULL_WEIGHT)
      throw invalidField(`${at}.percentage`, 'the last step must be 100');
    previous = weight;
    const wait = durationMs(step.after);
    if (typeof wait === 'string') throw invalidField(`${at}.after`, wait);
    return wait;
  });
}

/**
 * The fallthrough rollout of a step: `weight` on the target, the rest on the variation served
 * before the plan. The target comes first, so it holds buckets `[0, weight)`: the engine's
 * buckets are cumulative in rollout order (`packages/engine/src/compile.ts`) and a user's bucket
 * depends only on the flag's salt and their identity, so a user in the target at 10% is in it at
 * 50% (spec section 4: stable buckets).
 */
export function stepRollout(
  targetVariationId: string,
  previousVariationId: string,
  weight: number,
): { variationId: string; weight: number }[] {
  return [
    { variationId: targetVariationId, weight },
    { variationId: previousVariationId, weight: FULL_WEIGHT - weight },
  ];
}
