/** The change-request list's address; `tab` is one of its tabs ("to-review" …). */
export function changeRequestsPath(org: string, project: string, tab?: string): string {
  const path = `/orgs/${org}/projects/${project}/change-requests`;
  return tab ? `${path}?tab=${tab}` : path;
}

/** One change request's page, by its number in the project ("CR 12"). */
export function changeRequestPath(org: string, project: string, number: number): string {
  return `/orgs/${org}/projects/${project}/change-requests/${number}`;
}
