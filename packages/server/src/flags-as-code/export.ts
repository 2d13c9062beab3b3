import type { Kysely, Selectable } from 'kysely';
import { stringify } from 'yaml';
import type { ProjectsTable, Schema } from '../db/schema.js';
import { invalidField } from '../errors.js';
import {
  DOCUMENT_SCHEMA_FILE,
  DOCUMENT_VERSION,
  type DocumentFlag,
  type DocumentVariation,
  type ProjectDocument,
} from '../writes/document.js';
import {
  documentEnvironment,
  documentFlag,
  documentSegment,
  readProjectState,
} from '../writes/project-state.js';
import { documentVariationValue } from '../writes/variation-values.js';

export const EXPORT_FORMATS = ['yaml', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * A document as exported: a Json variation's value is the JSON value itself (object, array,
 * number …), not its text; `vexil apply` reads either (issue 43).
 */
export type ExportedDocument = Omit<ProjectDocument, 'flags'> & {
  flags: (Omit<DocumentFlag, 'variations'> & {
    variations: (Omit<DocumentVariation, 'value'> & { value: unknown })[];
  })[];
};

/**
 * A project as a flags-as-code document (design record 027): everything by key, flags and
 * segments by key, environments by sort order then key, rules by priority, so that the same
 * state always gives the same document, on any instance.
 * @param environmentKeys only these environments (and each flag's configuration in them); all
 *   when empty.
 * @throws ApiError 400 `validation_failed` on `environment` naming an unknown environment.
 */
export async function exportProject(
  db: Kysely<Schema>,
  project: Selectable<ProjectsTable>,
  options: { environmentKeys: readonly string[] },
): Promise<ExportedDocument> {
  const state = await readProjectState(db, project);
  const known = new Set(state.environments.map((e) => e.key));
  const unknown = options.environmentKeys.filter((key) => !known.has(key));
  if (unknown.length > 0)
    throw invalidField(
      'environment',
      `unknown environment${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; the project has ${[...known].join(', ')}`,
    );
  const wanted = new Set(options.environmentKeys);
  const environments = state.environments.filter((e) => wanted.size === 0 || wanted.has(e.key));
  const segmentKeys = new Map(state.segments.map((s) => [s.id, s.key]));
  return {
    $schema: DOCUMENT_SCHEMA_FILE,
    version: DOCUMENT_VERSION,
    project: { key: project.key, name: project.name, description: project.description },
    environments: environments.map(documentEnvironment),
    segments: state.segments.map(documentSegment),
    flags: state.flags.map((stored) => {
      const flag = documentFlag(stored, environments, segmentKeys);
      return {
        ...flag,
        variations: flag.variations.map((v) => ({
          ...v,
          value: documentVariationValue(flag.type, v.value),
        })),
      };
    }),
  };
}

/**
 * The document as text: YAML led by the yaml-language-server comment that points editors at the
 * schema, or JSON (two-space indent); both end with a newline.
 */
export function serializeDocument(document: ExportedDocument, format: ExportFormat): string {
  if (format === 'json') return `${JSON.stringify(document, null, 2)}\n`;
  const schema = document.$schema ? `# yaml-language-server: $schema=${document.$schema}\n` : '';
  // Written as YAML 1.1 would need it (`"on"`, `"yes"`, `"2026-01-01"` quoted), so that readers of
  // either YAML version, CI tools included, see the same strings; read back as YAML 1.2.
  return (
    schema + stringify(document, { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false })
  );
}
