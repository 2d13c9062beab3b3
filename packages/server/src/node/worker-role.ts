import type { FastifyBaseLogger } from 'fastify';
import type { NodeBus } from '../bus/node-bus.js';
import { scheduledChangeRequests } from '../change-requests/due-work.js';
import { releasePlanGuards } from '../management/release-plans/guard.js';
import { experimentChecks } from '../management/experiments/checks.js';
import { releasePlanSteps } from '../management/release-plans/steps.js';
import { DueWorkRunner } from '../schedules/due-work.js';
import type { Services } from '../services.js';
import { DeliveryWorker } from '../webhooks/worker.js';

/** The worker role's background work: webhook deliveries and scheduled work. */
export interface WorkerRole {
  /** The webhook delivery worker; tests drive it with `runOnce()`. */
  webhookWorker: DeliveryWorker;
  /** Scheduled work (design record 041); register each `DueWork` here. */
  dueWork: DueWorkRunner;
  /** Starts both (once the database is prepared). */
  start(): void;
  /** Stops both; the attempts in flight are recorded. */
  stop(): Promise<void>;
}

/**
 * The worker role (design records 005, 029, 041): delivers webhooks and runs due work. Every
 * node holds one (tests drive it by hand); only nodes with the role start it.
 */
export function workerRole(services: Services, bus: NodeBus, log: FastifyBaseLogger): WorkerRole {
  const webhookWorker = new DeliveryWorker(services, log);
  bus.onDeliveriesQueued(() => webhookWorker.wake());
  const dueWork = new DueWorkRunner(services.clock, log);
  dueWork.register(scheduledChangeRequests(services));
  dueWork.register(releasePlanSteps(services));
  dueWork.register(releasePlanGuards(services));
  dueWork.register(experimentChecks(services));
  return {
    webhookWorker,
    dueWork,
    start() {
      webhookWorker.start();
      dueWork.start();
    },
    async stop() {
      await webhookWorker.stop();
      await dueWork.stop();
    },
  };
}
