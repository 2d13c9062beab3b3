import type { OpenChangeRequest } from '../writes/protected-changes.js';
import { checkChanges } from './changes.js';
import { insertChangeRequest } from './service.js';
import type { Author } from './store.js';

/**
 * How flags-as-code opens the change requests of an apply (design record 042, "Flags as code and
 * agents"): inside the apply's transaction, checked against the state the apply left, opened for
 * review, as `author` (the API caller, or the CLI's operator).
 * @throws ApiError 400 `validation_failed` naming the path of each problem of the changes
 */
export function flagsAsCodeOpener(author: Author, authorId: string): OpenChangeRequest {
  return async (m, { state, environment, title, description, changes }) => {
    const checked = checkChanges(state, environment, changes);
    const row = await insertChangeRequest(
      m,
      { project: state.project, environment },
      { author, id: authorId },
      { title, description, changes: checked, applyAt: null, submit: true },
    );
    return { number: row.number, state: row.state };
  };
}
