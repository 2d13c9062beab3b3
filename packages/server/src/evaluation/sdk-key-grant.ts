/** What an SDK key grants: one environment, as a client or a server. */
export interface SdkKeyGrant {
  environmentId: string;
  type: 'ClientSide' | 'ServerSide';
}
