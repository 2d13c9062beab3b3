/** What an SDK key grants: one environment, as a client or a server. */
export interface SdkKeyGrant {
  environmentId: string;
  type: 'ClientSide' | 'ServerSide';
  /**
   * The key's id, under which its last use is recorded; null for a grant read from a snapshot
   * copy written before copies held key ids (its use is then not recorded).
   */
  keyId: string | null;
}
