import { Type } from 'typebox';
import { hasRole } from '../auth/roles.js';
import type { Role } from '../db/schema.js';

/** One capability hint (spec: Capability hints). */
export interface ActionHint {
  allowed: boolean;
  reason: string | null;
}

export const ActionsSchema = Type.Record(
  Type.String(),
  Type.Object({ allowed: Type.Boolean(), reason: Type.Union([Type.String(), Type.Null()]) }),
);

/**
 * Computes `_actions` from the caller's role and the resource state: each operation names the
 * role it needs and, optionally, a state-based refusal (`blockedBy` returns a reason or null).
 */
export function actionsFor(
  role: Role,
  operations: Record<string, { role: Role; blockedBy?: string | null }>,
): Record<string, ActionHint> {
  const hints: Record<string, ActionHint> = {};
  for (const [name, { role: needed, blockedBy }] of Object.entries(operations)) {
    if (!hasRole(role, needed))
      hints[name] = { allowed: false, reason: `requires the ${needed} role` };
    else if (blockedBy) hints[name] = { allowed: false, reason: blockedBy };
    else hints[name] = { allowed: true, reason: null };
  }
  return hints;
}
