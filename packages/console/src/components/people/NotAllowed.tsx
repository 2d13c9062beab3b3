/**
 * What a person sees on a page their role does not open (a direct link, a bookmark): the reason
 * the API gives, instead of an empty page or a raw 403.
 */
export function NotAllowed(props: { page: string; reason: string | null | undefined }) {
  return (
    <section aria-labelledby="not-allowed">
      <h1 id="not-allowed">{props.page}</h1>
      <p role="alert">
        You are not allowed to open this page
        {props.reason ? `: it ${props.reason}` : ''}. Ask an Admin or Owner of the organization.
      </p>
    </section>
  );
}
