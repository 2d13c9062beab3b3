import type { Role } from '../db/schema.js';

/** Roles from least to most privileged (spec: Authentication rule 2). */
export const ROLES: readonly Role[] = ['Viewer', 'Member', 'Admin', 'Owner'];

/** Whether `role` is at least `minimum`. */
export function hasRole(role: Role, minimum: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(minimum);
}
