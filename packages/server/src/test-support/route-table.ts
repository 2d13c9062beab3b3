import { createVexil } from '../node/full-node.js';
import { testConfig } from './harness.js';

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type Method = (typeof METHODS)[number];

/** One management route as the OpenAPI document publishes it: `id` is `METHOD /path/{param}`. */
export interface ManagementRoute {
  method: Method;
  path: string;
  id: string;
}

/** The management routes (`/api/v1/…`), read from the live route table. */
export async function managementRoutes(): Promise<ManagementRoute[]> {
  const vexil = await createVexil(testConfig({ databaseUrl: ':memory:' }), { logger: false });
  await vexil.app.ready();
  const paths = (vexil.app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths;
  await vexil.close();
  const routes: ManagementRoute[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.startsWith('/api/v1/')) continue;
    for (const name of Object.keys(operations)) {
      const method = name.toUpperCase() as Method;
      if (METHODS.includes(method)) routes.push({ method, path, id: `${method} ${path}` });
    }
  }
  return routes;
}
