/**
 * Write-time checking of the prerequisite graph. The evaluator also survives cycles and missing
 * flags (it returns an ERROR result), but the server should refuse to store them in the first place.
 */

/**
 * How deep prerequisite chains may go: a flag, its prerequisite, that one's prerequisite, and so
 * on, counting edges. Deeper chains evaluate to an ERROR result, which bounds evaluation's
 * recursion whatever the configuration.
 */
export const MAX_PREREQUISITE_DEPTH = 32;

/** The part of a flag the prerequisite check needs (an `SdkFlag` fits). */
export interface PrerequisiteGraphFlag {
  key: string;
  /** When given, `expectedVariationKey`s pointing at this flag are checked against it. */
  variations?: readonly { key: string }[];
  prerequisites: readonly { prerequisiteFlagKey: string; expectedVariationKey?: string }[];
}

/** The first problem found in a prerequisite graph. */
export interface PrerequisiteProblem {
  kind: 'missing' | 'cycle' | 'unknown-variation' | 'too-deep';
  /** The flag whose prerequisite is at fault. */
  flagKey: string;
  /** The prerequisite at fault. */
  prerequisiteKey: string;
  /** For `cycle`, the cycle itself, first flag repeated last (`a → b → a`); else the chain walked. */
  path: string[];
  message: string;
}

interface Frame {
  flag: PrerequisiteGraphFlag;
  next: number;
  height: number;
}

/**
 * Finds the first prerequisite problem: a prerequisite flag that does not exist, a cycle
 * (including a flag requiring itself), an `expectedVariationKey` the prerequisite flag does not
 * have, or a chain deeper than {@link MAX_PREREQUISITE_DEPTH}. Iterative, so arbitrarily long
 * chains cannot overflow the stack.
 *
 * @param flags - every flag of the environment, with the change being validated applied
 * @param startKey - when given, only problems reachable from this flag are reported (so that an
 *   existing problem elsewhere does not block an unrelated write); depth is then measured from
 *   this flag down
 * @returns the problem, or `undefined` when the graph is sound
 */
export function findPrerequisiteProblem(
  flags: readonly PrerequisiteGraphFlag[],
  startKey?: string,
): PrerequisiteProblem | undefined {
  const byKey = new Map<string, PrerequisiteGraphFlag>();
  for (const flag of flags) if (!byKey.has(flag.key)) byKey.set(flag.key, flag);
  // Longest chain below each fully explored flag, in edges; absent = not yet explored.
  const heights = new Map<string, number>();
  const onPath = new Set<string>();
  const roots = startKey === undefined ? [...byKey.keys()] : [startKey];

  for (const rootKey of roots) {
    const root = byKey.get(rootKey);
    if (root === undefined || heights.has(rootKey)) continue;
    const stack: Frame[] = [{ flag: root, next: 0, height: 0 }];
    onPath.add(rootKey);
    while (stack.length > 0) {
      const frameIndex = stack.length - 1;
      const frame = stack[frameIndex] as Frame;
      const prerequisite = frame.flag.prerequisites[frame.next];
      if (prerequisite === undefined) {
        stack.pop();
        onPath.delete(frame.flag.key);
        heights.set(frame.flag.key, frame.height);
        const parent = stack[stack.length - 1];
        if (parent !== undefined) parent.height = Math.max(parent.height, frame.height + 1);
        continue;
      }
      frame.next += 1;
      const flagKey = frame.flag.key;
      const prerequisiteKey = prerequisite.prerequisiteFlagKey;
      const path = (): string[] => [...stack.map((f) => f.flag.key), prerequisiteKey];
      const target = byKey.get(prerequisiteKey);
      if (target === undefined) {
        return {
          kind: 'missing',
          flagKey,
          prerequisiteKey,
          path: path(),
          message: `flag "${flagKey}" requires flag "${prerequisiteKey}", which does not exist`,
        };
      }
      const expected = prerequisite.expectedVariationKey;
      if (
        expected !== undefined &&
        target.variations !== undefined &&
        !target.variations.some((v) => v.key === expected)
      ) {
        return {
          kind: 'unknown-variation',
          flagKey,
          prerequisiteKey,
          path: path(),
          message: `flag "${flagKey}" expects variation "${expected}" of flag "${prerequisiteKey}", which has no such variation`,
        };
      }
      if (onPath.has(prerequisiteKey)) {
        const keys = stack.map((f) => f.flag.key);
        const cycle = [...keys.slice(keys.indexOf(prerequisiteKey)), prerequisiteKey];
        return {
          kind: 'cycle',
          flagKey,
          prerequisiteKey,
          path: cycle,
          message: `prerequisites form a cycle: ${cycle.join(' → ')}`,
        };
      }
      const known = heights.get(prerequisiteKey);
      if (known !== undefined) {
        frame.height = Math.max(frame.height, known + 1);
      } else {
        stack.push({ flag: target, next: 0, height: 0 });
        onPath.add(prerequisiteKey);
      }
      if (Math.max(frameIndex + frame.height, stack.length - 1) > MAX_PREREQUISITE_DEPTH) {
        return {
          kind: 'too-deep',
          flagKey,
          prerequisiteKey,
          path: path(),
          message: `prerequisite chains may be at most ${MAX_PREREQUISITE_DEPTH} flags deep; the chain through "${flagKey}" → "${prerequisiteKey}" is deeper`,
        };
      }
    }
  }
  return undefined;
}
