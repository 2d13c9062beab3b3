import {
  useMutation,
  type UseMutationOptions,
  type UseMutationResult,
} from '@tanstack/react-query';
import type { SubmitEvent } from 'react';
import { ApiProblem } from '../api/client';

/**
 * A save through the management API: the mutation, plus where each of the API's messages goes
 * (design records 023 and 058). `V` is what `mutate` takes: nothing for a form, e.g. the row's id
 * for a button.
 */
export type FormMutation<T, V = void> = UseMutationResult<T, Error, V> & {
  /** The form's `onSubmit`: saves without reloading the page (for a mutation taking nothing). */
  submit: (event: SubmitEvent) => void;
  /**
   * What the API said about `field` and the fields inside it (`conditions` gathers
   * `conditions.0.values`), joined with "; ".
   */
  problemAt: (field: string) => string | undefined;
  /**
   * The failure no field carries (a refusal naming no field, a network error), for the form to
   * show once; undefined when `messageAt` names the field that shows it instead.
   */
  message: string | undefined;
};

/**
 * The console's one way to change something through the management API (design record 058):
 * `useMutation` with a form's submit handler and the {@link ApiProblem}'s `fields` mapped to the
 * controls that show them, so the typed text stays and the message sits next to what it concerns.
 * A button's action (revoke, archive, reorder) uses it too, with `mutate(variables)`.
 *
 * `messageAt` names the field that also shows a failure naming no field: a one-line form has no
 * room for a message of its own, and its first field is where the reader looks.
 */
export function useFormMutation<T, V = void>(
  options: UseMutationOptions<T, Error, V> & { messageAt?: string },
): FormMutation<T, V> {
  const { messageAt, ...mutationOptions } = options;
  const mutation = useMutation(mutationOptions);
  const { error } = mutation;
  const fields = error instanceof ApiProblem ? error.fields : {};
  const unplaced = error && Object.keys(fields).length === 0 ? error.message : undefined;
  const problemAt = (field: string) => {
    const messages = Object.entries(fields)
      .filter(([name]) => name === field || name.startsWith(`${field}.`))
      .flatMap(([, list]) => list);
    if (messages.length > 0) return messages.join('; ');
    return field === messageAt ? unplaced : undefined;
  };
  return {
    ...mutation,
    submit: (event) => {
      event.preventDefault();
      // A form's mutation takes nothing (`V` is void).
      const nothing = undefined as V;
      mutation.mutate(nothing);
    },
    problemAt,
    message: messageAt === undefined ? unplaced : undefined,
  };
}
