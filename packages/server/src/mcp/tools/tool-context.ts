import { z } from 'zod';
import type { SnapshotStore } from '../../evaluation/snapshots.js';
import type { ManagementClient } from '../management-client.js';
import type { TwinSchema } from '../twin-schemas.js';

/** What every tool is given: the caller's management client, the twins' schemas, snapshots. */
export interface ToolContext {
  client: ManagementClient;
  schemas: TwinSchema;
  snapshots: SnapshotStore;
  /** Where error codes are documented (`docs_url` of refusals made by the tools themselves). */
  publicUrl: string;
}

/** The `{org}` argument every tool takes. */
export const OrgArgument = z
  .string()
  .min(1)
  .describe('Organization slug or id (the {org} path segment of the management API).');

/** Paging arguments, as the management API's `limit` and `cursor` query parameters. */
export const PageArguments = {
  limit: z.number().int().min(1).max(200).optional().describe('Page size (default 50).'),
  cursor: z.string().max(512).optional().describe('`next_cursor` of the previous page.'),
};
