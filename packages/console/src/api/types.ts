import type { paths } from './schema';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** The JSON body of an operation's success answer (200, else 201). */
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends { 200: infer S }
    ? Json<S>
    : R extends { 201: infer S }
      ? Json<S>
      : never
  : never;
/** The JSON body an operation takes. */
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: infer B;
}
  ? Json<NonNullable<B>>
  : never;

type Project = '/api/v1/orgs/{org}/projects/{project}';

export type Environment = Ok<`${Project}/environments`, 'get'>['items'][number];
export type FlagSummary = Ok<`${Project}/flags`, 'get'>['items'][number];
export type Flag = Ok<`${Project}/flags/{flag}`, 'get'>;
export type FlagEnvironment = Ok<`${Project}/flags/{flag}/environments`, 'get'>[number];
export type Rule = Ok<`${Project}/flags/{flag}/environments/{env}/rules`, 'get'>['items'][number];
export type Segment = Ok<`${Project}/segments`, 'get'>['items'][number];
export type AuditEvent = Ok<'/api/v1/orgs/{org}/audit-log', 'get'>['items'][number];
export type SegmentUsage = Ok<`${Project}/segments/{segment}/usage`, 'get'>['items'][number];
export type SdkKey = Ok<`${Project}/environments/{env}/sdk-keys`, 'get'>['items'][number];
export type Webhook = Ok<'/api/v1/orgs/{org}/webhooks/{id}', 'get'>;
export type WebhookItem = Ok<'/api/v1/orgs/{org}/webhooks', 'get'>['items'][number];
export type Delivery = Ok<'/api/v1/orgs/{org}/webhooks/{id}/deliveries', 'get'>['items'][number];
export type FlagCodeReferences = Ok<`${Project}/flags/{flag}/code-references`, 'get'>;
export type CodeRepository = Ok<`${Project}/code-references/repositories`, 'get'>['items'][number];
export type RemovalCandidate = Ok<`${Project}/flags/removal-candidates`, 'get'>['items'][number];
type FlagInEnvironment = `${Project}/flags/{flag}/environments/{env}`;
export type ReleasePlan = Ok<`${FlagInEnvironment}/release-plan`, 'get'>;
export type GuardReading = Ok<`${FlagInEnvironment}/release-plan/guard`, 'get'>;
export type DeliveryDetail = Ok<'/api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}', 'get'>;

/** A metric of the project's catalogue, as lists give it (experiments.md §1). */
export type Metric = Ok<`${Project}/metrics`, 'get'>['items'][number];
export type MetricInput = Body<`${Project}/metrics`, 'post'>;
export type MetricKind = Metric['kind'];
export type Direction = Metric['direction'];
type Experiments = `${FlagInEnvironment}/experiments`;
/** An experiment as lists give it (experiments.md §2). */
export type ExperimentItem = Ok<Experiments, 'get'>['items'][number];
/** One experiment, with its `_actions` and the change request a start or stop opened. */
export type Experiment = Ok<`${Experiments}/{experiment}`, 'get'>;
export type ExperimentInput = Body<Experiments, 'post'>;
export type ExperimentStatus = ExperimentItem['status'];
export type Decision = Body<`${Experiments}/{experiment}/stop`, 'post'>['decision'];
/** An experiment's results (experiments.md §3). */
export type ExperimentResults = Ok<`${Experiments}/{experiment}/results`, 'get'>;
export type MetricResult = ExperimentResults['metrics'][number];
export type Verdict = NonNullable<MetricResult['byVariation'][string]['verdict']>;
export type SeriesPoint = ExperimentResults['series'][number];

type Org = '/api/v1/orgs/{org}';

export type Me = Ok<'/api/v1/me', 'get'>;
export type Organization = Ok<Org, 'get'>;
export type Member = Ok<`${Org}/members`, 'get'>['items'][number];
export type Invitation = Ok<`${Org}/invitations`, 'get'>['items'][number];
export type AccessToken = Ok<'/api/v1/me/tokens', 'get'>['items'][number];
export type Session = Ok<'/api/v1/me/sessions', 'get'>['items'][number];
export type SsoConnection = Ok<`${Org}/sso-connections`, 'get'>['items'][number];
export type RelayKey = Ok<`${Org}/relay-keys`, 'get'>['items'][number];
export type Role = Member['role'];
export const ROLES: readonly Role[] = ['Viewer', 'Member', 'Admin', 'Owner'];

export type EnvironmentPolicy = Environment['changeRequests'];
export type ChangeRequest = Ok<`${Project}/change-requests`, 'get'>['items'][number];
export type ChangeRequestDetail = Ok<`${Project}/change-requests/{number}`, 'get'>;
export type Change = ChangeRequest['changes'][number];
export type ChangeRequestState = ChangeRequest['state'];
