import type { App } from '../http/app-instance.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';
import { registerAuditLogRoutes } from '../audit-log/routes.js';
import { registerChangeRequestRoutes } from '../change-requests/routes.js';
import { registerCodeReferenceRoutes } from '../management/code-refs/routes.js';
import { registerEnvironmentRoutes } from '../management/environments/routes.js';
import { registerCopyConfigurationRoutes } from '../management/flags/copy-configuration.js';
import { registerFlagEnvironmentRoutes } from '../management/flags/flag-environments.js';
import { registerReleasePlanRoutes } from '../management/release-plans/routes.js';
import { registerExperimentRoutes } from '../management/experiments/routes.js';
import { registerMetricRoutes } from '../management/metrics/routes.js';
import { openChangeRequest } from '../change-requests/service.js';
import { registerFlagsAsCodeRoutes } from '../flags-as-code/routes.js';
import { registerLifecycleRoutes } from '../management/flags/lifecycle.js';
import { registerPlaygroundRoutes } from '../management/flags/playground.js';
import { registerFlagRoutes } from '../management/flags/routes.js';
import { registerVariationRoutes } from '../management/flags/variations.js';
import { registerInvitationRoutes } from '../management/invitations/routes.js';
import { registerMemberRoutes } from '../management/members/routes.js';
import { registerMeRoutes } from '../management/me/routes.js';
import { registerMyPasswordRoutes } from '../management/me/password.js';
import { registerMySessionRoutes } from '../management/me/sessions.js';
import { registerOrgRoutes } from '../management/orgs/routes.js';
import { registerProjectRoutes } from '../management/projects/routes.js';
import { registerSdkKeyRoutes } from '../management/sdk-keys/routes.js';
import { registerRelayKeyRoutes } from '../management/relay-keys/routes.js';
import { registerServiceTokenRoutes } from '../management/service-tokens/routes.js';
import { registerSsoConnectionRoutes } from '../management/sso-connections/routes.js';
import { registerRuleRoutes } from '../management/targeting/rules.js';
import { registerSegmentRoutes } from '../management/targeting/segments.js';
import { registerWebhookRoutes } from '../webhooks/routes.js';
import type { LiveFeed } from '../events/live-feed.js';
import { registerLiveRoutes } from '../management/live/routes.js';
import { registerUsageRoutes } from '../usage/routes.js';

/**
 * The management API's route table, mounted under `/api/v1` by the management role: each area
 * (management's resources, usage, webhooks) exports its own registrar and none imports another's.
 * The order is the API description's: `openapi.json` lists paths as they are registered.
 */
export function registerManagementApi(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  liveFeed: LiveFeed,
): void {
  registerMeRoutes(app, services);
  registerOrgRoutes(app, services);
  registerServiceTokenRoutes(app, services);
  registerRelayKeyRoutes(app, services);
  registerProjectRoutes(app, services);
  registerEnvironmentRoutes(app, services);
  registerFlagRoutes(app, services);
  registerVariationRoutes(app, services);
  registerFlagEnvironmentRoutes(app, services);
  registerCopyConfigurationRoutes(app, services);
  registerReleasePlanRoutes(app, services);
  registerMetricRoutes(app, services);
  registerExperimentRoutes(app, services, async (scope, environment, title, change) =>
    openChangeRequest(services, scope, { environment, title, changes: [change], submit: true }),
  );
  registerLifecycleRoutes(app, services);
  registerUsageRoutes(app, services);
  registerPlaygroundRoutes(app, services, snapshots);
  registerSdkKeyRoutes(app, services);
  registerSegmentRoutes(app, services);
  registerRuleRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerAuditLogRoutes(app, services);
  registerLiveRoutes(app, services, liveFeed);
  registerFlagsAsCodeRoutes(app, services);
  registerChangeRequestRoutes(app, services);
  registerCodeReferenceRoutes(app, services);
  // People and sign-in (design record 022).
  registerMySessionRoutes(app, services);
  registerMyPasswordRoutes(app, services);
  registerMemberRoutes(app, services);
  registerInvitationRoutes(app, services);
  registerSsoConnectionRoutes(app, services);
}
