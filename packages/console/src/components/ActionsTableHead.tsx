/**
 * The header row of a table whose last column holds each row's buttons (Edit, Revoke, Delete…):
 * that column is named "Actions" for screen readers only, since the buttons say what they do.
 */
export function ActionsTableHead(props: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {props.columns.map((column) => (
          <th key={column} scope="col">
            {column}
          </th>
        ))}
        <th scope="col">
          <span className="visually-hidden">Actions</span>
        </th>
      </tr>
    </thead>
  );
}
