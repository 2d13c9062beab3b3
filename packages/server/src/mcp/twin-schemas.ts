import { z } from 'zod';
import type { App } from '../http/app-instance.js';

/** Just enough of the OpenAPI document to reach a response schema. */
interface OpenApiDocument {
  paths?: Record<
    string,
    Record<
      string,
      {
        responses?: Record<
          string,
          { content?: Record<string, { schema?: z.core.JSONSchema.JSONSchema }> }
        >;
      }
    >
  >;
}

type JsonSchema = z.core.JSONSchema.JSONSchema;

/**
 * An intersection of object schemas (TypeBox's `Intersect`, written `allOf`) as the one object
 * schema it describes: an MCP tool's output schema must be an object schema.
 */
function objectSchema(json: JsonSchema): JsonSchema {
  const parts = json.allOf;
  if (!parts?.every((part) => typeof part === 'object' && part.type === 'object')) return json;
  const objects = parts;
  return {
    type: 'object',
    properties: Object.assign({}, ...objects.map((part) => part.properties ?? {})) as Record<
      string,
      JsonSchema
    >,
    required: objects.flatMap((part) => part.required ?? []),
  };
}

/** Reads the response schemas of the HTTP twins from the service's own OpenAPI document. */
export type TwinSchema = (method: string, path: string, status?: number) => z.ZodType;

/**
 * The output schemas of MCP tools are their HTTP twin's response schema, taken from the OpenAPI
 * document the service publishes (one schema per endpoint drives validation, the OpenAPI document
 * and the tool listing; design record 011).
 * @param app - a ready app (the document exists once every route is registered)
 * @throws Error when the twin has no JSON response schema: a programming error, caught by tests
 */
export function twinSchemas(app: App): TwinSchema {
  const document = app.swagger() as OpenApiDocument;
  const cache = new Map<string, z.ZodType>();
  return (method, path, status = 200) => {
    const id = `${method} ${path} ${status}`;
    let schema = cache.get(id);
    if (!schema) {
      const json =
        document.paths?.[path]?.[method.toLowerCase()]?.responses?.[String(status)]?.content?.[
          'application/json'
        ]?.schema;
      if (!json) throw new Error(`No ${status} response schema for ${id}.`);
      schema = z.fromJSONSchema(objectSchema(json));
      cache.set(id, schema);
    }
    return schema;
  };
}
