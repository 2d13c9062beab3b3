import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** The SDK-facing APIs: the evaluation API (`/v1`) and OFREP (`/ofrep/v1`). */
const EVALUATION_PATH = /^\/(?:ofrep\/)?v1\//;

/**
 * Fastify's request logging without the two info lines per request ("incoming request",
 * "request completed") on the evaluation APIs, which SDKs call tens of thousands of times a second:
 * at the default `info` level those lines cost more than the evaluation itself. Everything else is
 * logged as before, errors on the evaluation APIs included (their error handlers log 5xx answers,
 * and a failure while sending still logs "request errored").
 */
export class EvaluationQuietLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (!EVALUATION_PATH.test(request.url)) super.incomingRequest(request, reply);
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error || !EVALUATION_PATH.test(request.url)) super.requestCompleted(error, request, reply);
  }
}
