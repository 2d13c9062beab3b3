/**
 * The benchmark's ceiling: the cheapest possible answer on this machine, in its own process like
 * the real service. `node hello-server.js <port> fastify|node` serves `GET /hello` with a small
 * JSON body from a bare Fastify app (no logger, no plugins) or from bare `node:http`.
 *
 * The Fastify flavour also serves `POST /evaluate`: the body and response schemas of
 * `POST /v1/sdk/evaluate`, answering a constant — what a schema-validated JSON POST costs in
 * Fastify before any work is done.
 *
 * The `node:http` flavour is also the SSE fan-out ceiling: `GET /stream` holds a Server-Sent
 * Events response open, and `POST /broadcast` writes its body as one `put` event (with an
 * increasing id) to every open stream, then answers 204 — the same work Vexil's stream does
 * after a change, minus reading and serializing the configuration.
 *
 * Given a directory as a third argument, the `node:http` flavour also answers `POST /answer/<name>`
 * with the bytes of the file `<name>` there once it has read the request's body: the ceiling of
 * an evaluation route that sends those bytes (`bench:client-scale`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import Fastify from 'fastify';

const HELLO = { hello: 'world' };

const port = Number(process.argv[2]);
const flavour = process.argv[3] ?? 'fastify';
if (!Number.isInteger(port) || port <= 0 || !['fastify', 'node'].includes(flavour)) {
  console.error('usage: hello-server.js <port> fastify|node');
  process.exit(1);
}

/** The answers of `POST /answer/<name>`, by name. */
const answers = new Map<string, Buffer>();
const answersDirectory = process.argv[4];
if (answersDirectory !== undefined)
  for (const name of readdirSync(answersDirectory))
    answers.set(`/answer/${name}`, readFileSync(join(answersDirectory, name)));

const streams = new Set<ServerResponse>();
let version = 0;

function openStream(request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(`event: put\nid: ${version}\ndata: {}\n\n`);
  streams.add(response);
  request.once('close', () => streams.delete(response));
}

/** Reads the body, then sends `answer` as JSON, as an evaluation route does. */
function sendAnswer(request: IncomingMessage, response: ServerResponse, answer: Buffer): void {
  request.resume();
  request.once('end', () => {
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': answer.length,
    });
    response.end(answer);
  });
}

function broadcast(request: IncomingMessage, response: ServerResponse): void {
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => (body += chunk));
  request.once('end', () => {
    version++;
    const frame = `event: put\nid: ${version}\ndata: ${body}\n\n`;
    for (const stream of streams) stream.write(frame);
    response.writeHead(204).end();
  });
}

if (flavour === 'fastify') {
  const app = Fastify({ logger: false });
  // Both handlers are async like Vexil's own, so that the ceiling pays what they pay.
  // eslint-disable-next-line @typescript-eslint/require-await -- async like Vexil's handlers
  app.get('/hello', async () => HELLO);
  app.post(
    '/evaluate',
    {
      schema: {
        body: {
          type: 'object',
          required: ['flagKey', 'context'],
          properties: {
            flagKey: { type: 'string', minLength: 1 },
            context: {
              type: 'object',
              properties: { userId: { type: 'string' }, attributes: { type: 'object' } },
            },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              key: { type: 'string' },
              variation: { type: ['string', 'null'] },
              value: {},
              reason: { type: 'string' },
            },
          },
        },
      },
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- async like Vexil's handlers
    async (request) => ({
      key: (request.body as { flagKey: string }).flagKey,
      variation: 'true',
      value: true,
      reason: 'TARGETING_MATCH',
    }),
  );
  await app.listen({ host: '127.0.0.1', port });
} else {
  const body = JSON.stringify(HELLO);
  createServer((request, response) => {
    if (request.url === '/stream') openStream(request, response);
    else if (request.url === '/broadcast' && request.method === 'POST')
      broadcast(request, response);
    else if (answers.has(request.url ?? ''))
      sendAnswer(request, response, answers.get(request.url ?? '') as Buffer);
    else {
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      response.end(body);
    }
  }).listen(port, '127.0.0.1');
}
