/**
 * The benchmark's ceiling: the cheapest possible answer on this machine, in its own process like
 * the real service. `node hello-server.js <port> fastify|node` serves `GET /hello` with a small
 * JSON body from a bare Fastify app (no logger, no plugins) or from bare `node:http`.
 */
import { createServer } from 'node:http';
import Fastify from 'fastify';

const HELLO = { hello: 'world' };

const port = Number(process.argv[2]);
const flavour = process.argv[3] ?? 'fastify';
if (!Number.isInteger(port) || port <= 0 || !['fastify', 'node'].includes(flavour)) {
  console.error('usage: hello-server.js <port> fastify|node');
  process.exit(1);
}

if (flavour === 'fastify') {
  const app = Fastify({ logger: false });
  app.get('/hello', async () => HELLO);
  await app.listen({ host: '127.0.0.1', port });
} else {
  const body = JSON.stringify(HELLO);
  createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end(body);
  }).listen(port, '127.0.0.1');
}
