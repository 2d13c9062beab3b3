import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ValidateFunction } from 'ajv';
import Fastify from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import type { App } from '../http/app-instance.js';
import { clientErrorHandler } from './client-errors.js';
import { frameworkErrorHandler } from './framework-errors.js';
import { parseJsonBody } from '../http/json-body.js';
import { loggerOptions, RequestLogController } from '../http/logging.js';
import { BODY_LIMITS, limitedJsonParser } from '../http/request-limits.js';
import { forbidSniffing } from '../http/response-headers.js';
import { schemaCompiler } from '../http/schema-validator.js';

const JSON_TYPES = /^(text\/json|application\/json|application\/[\w.+-]+\+json)\s*(;.*)?$/i;

/** How a node's HTTP app logs. */
export interface HttpLogOptions {
  logger?: boolean;
  /** Where log lines go instead of standard output (tests capture them). */
  logStream?: NodeJS.WritableStream;
}

/** A node's Fastify app before any role registers on it, and its body validator compiler. */
export interface HttpApp {
  app: App;
  /** Compiles body schemas strictly (no coercion); the lean lane validates with it too. */
  compileBody: (schema: TSchema) => ValidateFunction;
}

/**
 * The HTTP app every node starts from, whatever its roles: Fastify with the node's logger, error
 * handlers, validators and JSON parser, `X-Content-Type-Options`, and OpenAPI generation.
 */
export function createHttpApp(config: Config, options: HttpLogOptions): HttpApp {
  // Bodies are validated strictly (no coercion: a null `enabled` must not become false);
  // query strings and path parameters are strings on the wire and are coerced.
  const compileBody = schemaCompiler({ coerceTypes: false, useDefaults: true });
  const compileQuery = schemaCompiler({ coerceTypes: true, useDefaults: true });

  const app = Fastify({
    logger: options.logger === false ? false : loggerOptions(config.logLevel, options.logStream),
    logController: new RequestLogController(),
    bodyLimit: BODY_LIMITS.management,
    frameworkErrors: frameworkErrorHandler(config.publicUrl),
    clientErrorHandler: clientErrorHandler(config.publicUrl),
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? compileBody : compileQuery)(schema),
  );
  // Every JSON body, `application/json` included, is checked against the JSON limits; our parser
  // says where a body that is not JSON goes wrong (line, column), where Fastify's only says that.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    JSON_TYPES,
    { parseAs: 'string' },
    limitedJsonParser((_request, body, done) => {
      try {
        done(null, parseJsonBody(body));
      } catch (error) {
        done(error as Error, undefined);
      }
    }),
  );
  app.decorateRequest('caller', null);
  forbidSniffing(app);
  return { app, compileBody };
}

/**
 * Registers OpenAPI generation (`/openapi.json`) and the cookie parser: after the ops routes,
 * before the roles' routes, which the document describes.
 */
export async function registerOpenApi(app: App): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Vexil',
        version: 'v1',
        description: 'Vexil feature flag service: management and evaluation APIs.',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'Personal access token or service token',
          },
          sdkKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'SDK key' },
        },
      },
    },
  });
  await app.register(fastifyCookie);
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
}

/** The problem body of a request no route matched (every role's routes included). */
export function answerUnknownRoutes(
  app: App,
  detail = (path: string, method: string) => `No route ${method} ${path}.`,
): void {
  app.setNotFoundHandler(async (request, reply) =>
    reply.status(404).send({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: detail(request.url.split('?')[0] ?? request.url, request.method),
    }),
  );
}
