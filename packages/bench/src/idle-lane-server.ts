/**
 * The idle evaluation route of issue 23: `POST /v1/sdk/evaluate` answered with a constant by the
 * lean lane (design record 030), so that what is measured is the lane and the process around it,
 * not the evaluation. `node idle-lane-server.js <port> bare|vexil`:
 *
 * - `bare`: the lane in a bare `node:http` server, every other request answered 404;
 * - `vexil`: the lane in a whole Vexil node (configured from `VEXIL_*` like `vexil serve`), whose
 *   own lane gives way to this one, and whose Fastify app answers every other request.
 *
 * Between them, the two show what the process around the lane costs (design record 031).
 */
import { createServer, type RequestListener } from 'node:http';
import { Ajv } from 'ajv';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { createVexil } from '@vexil/server/dist/node/full-node.js';
import { loadConfig } from '@vexil/server/dist/config.js';
import { leanLane, type LeanRoute } from '@vexil/server/dist/evaluation/lean-lane.js';
import { ServerEvaluateBody } from '@vexil/server/dist/evaluation/routes.js';

const ANSWER = '{"key":"flag-0","variation":"on","value":true,"reason":"FALLTHROUGH"}';

const port = Number(process.argv[2]);
const flavour = process.argv[3];
if (!Number.isInteger(port) || port <= 0 || (flavour !== 'bare' && flavour !== 'vexil')) {
  console.error('usage: idle-lane-server.js <port> bare|vexil');
  process.exit(1);
}

const idleRoute: LeanRoute = {
  path: '/v1/sdk/evaluate',
  validate: new Ajv({ strict: false }).compile(ServerEvaluateBody),
  answer: () => ANSWER,
  observe: () => {},
};
const lane = (fallback: RequestListener, log: FastifyBaseLogger) =>
  leanLane([idleRoute], { bodyLimit: 1024 * 1024, accepting: () => true, log }, fallback);

if (flavour === 'bare') {
  const notFound: RequestListener = (_request, response) => response.writeHead(404).end();
  // The lane logs only the 5xx answers a constant never gives: Fastify's silent logger will do.
  createServer(lane(notFound, Fastify({ logger: false }).log)).listen(port, '127.0.0.1');
} else {
  const config = { ...loadConfig(), port };
  const vexil = await createVexil(config);
  await vexil.app.listen({ host: config.host, port });
  const server = vexil.app.server;
  server.removeAllListeners('request');
  server.on(
    'request',
    lane((request, response) => vexil.app.routing(request, response), vexil.app.log),
  );
}
