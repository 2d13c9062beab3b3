import { useProjects } from './organization';

/**
 * A project allowlist: "All projects" (the API's `null`) or the ticked ones (project ids), as
 * native checkboxes in a fieldset.
 */
export function ProjectAllowlist(props: {
  org: string;
  legend: string;
  value: string[] | null;
  error?: string | undefined;
  onChange: (value: string[] | null) => void;
}) {
  const projects = useProjects(props.org).data?.items ?? [];
  const { value } = props;
  return (
    <fieldset className="allowlist">
      <legend>{props.legend}</legend>
      <label className="check">
        <input
          type="checkbox"
          checked={value === null}
          onChange={(event) => props.onChange(event.target.checked ? null : [])}
        />
        All projects
      </label>
      {value !== null &&
        projects.map((project) => (
          <label className="check" key={project.id}>
            <input
              type="checkbox"
              checked={value.includes(project.id)}
              onChange={(event) =>
                props.onChange(
                  event.target.checked
                    ? [...value, project.id]
                    : value.filter((id) => id !== project.id),
                )
              }
            />
            {project.name}
          </label>
        ))}
      {props.error && <p className="field-error">{props.error}</p>}
    </fieldset>
  );
}

/** The names of an allowlist's projects, or "All projects". */
export function ProjectNames(props: { org: string; ids: string[] | null }) {
  const projects = useProjects(props.org).data?.items ?? [];
  if (props.ids === null) return <>All projects</>;
  return <>{props.ids.map((id) => projects.find((p) => p.id === id)?.name ?? id).join(', ')}</>;
}
