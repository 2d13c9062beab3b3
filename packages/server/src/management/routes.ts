import type { App } from '../http/app-instance.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';
import { registerAuditLogRoutes } from './audit-log/routes.js';
import { registerChangeRequestRoutes } from './change-requests/routes.js';
import { registerEnvironmentRoutes } from './environments/routes.js';
import { registerCopyConfigurationRoutes } from './flags/copy-configuration.js';
import { registerFlagEnvironmentRoutes } from './flags/flag-environments.js';
import { registerReleasePlanRoutes } from './release-plans/routes.js';
import { registerFlagsAsCodeRoutes } from './flags-as-code/routes.js';
import { registerLifecycleRoutes } from './flags/lifecycle.js';
import { registerPlaygroundRoutes } from './flags/playground.js';
import { registerFlagRoutes } from './flags/routes.js';
import { registerVariationRoutes } from './flags/variations.js';
import { registerInvitationRoutes } from './invitations/routes.js';
import { registerMemberRoutes } from './members/routes.js';
import { registerMeRoutes } from './me/routes.js';
import { registerMyPasswordRoutes } from './me/password.js';
import { registerMySessionRoutes } from './me/sessions.js';
import { registerOrgRoutes } from './orgs/routes.js';
import { registerProjectRoutes } from './projects/routes.js';
import { registerSdkKeyRoutes } from './sdk-keys/routes.js';
import { registerServiceTokenRoutes } from './service-tokens/routes.js';
import { registerSsoConnectionRoutes } from './sso-connections/routes.js';
import { registerRuleRoutes } from './targeting/rules.js';
import { registerSegmentRoutes } from './targeting/segments.js';
import { registerWebhookRoutes } from '../webhooks/routes.js';
import type { LiveFeed } from '../events/live-feed.js';
import { registerLiveRoutes } from './live/routes.js';
import { registerUsageRoutes } from '../usage/routes.js';

/** The management API's route table, mounted under `/api/v1`. */
export function registerManagementApi(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  liveFeed: LiveFeed,
): void {
  registerMeRoutes(app, services);
  registerOrgRoutes(app, services);
  registerServiceTokenRoutes(app, services);
  registerProjectRoutes(app, services);
  registerEnvironmentRoutes(app, services);
  registerFlagRoutes(app, services);
  registerVariationRoutes(app, services);
  registerFlagEnvironmentRoutes(app, services);
  registerCopyConfigurationRoutes(app, services);
  registerReleasePlanRoutes(app, services);
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
  // People and sign-in (design record 022).
  registerMySessionRoutes(app, services);
  registerMyPasswordRoutes(app, services);
  registerMemberRoutes(app, services);
  registerInvitationRoutes(app, services);
  registerSsoConnectionRoutes(app, services);
}
