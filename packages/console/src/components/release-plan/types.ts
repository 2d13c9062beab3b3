import type { GuardReading, ReleasePlan } from '../../api/types';

/** The parts of a release plan the components pass around (change-requests.md §4–5). */
export type ReleaseGuard = NonNullable<ReleasePlan['guard']>;
export type GuardSide = GuardReading['target'];
export type { GuardReading, ReleasePlan };
