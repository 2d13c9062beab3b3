import {
  useMutation,
  type UseMutationOptions,
  type UseMutationResult,
} from '@tanstack/react-query';
import type { SubmitEvent } from 'react';
import { ApiProblem } from '../api/client';

/** A form's save: the mutation, plus where each of the API's messages goes (design record 023). */
export type FormMutation<T> = UseMutationResult<T, Error, void> & {
  /** The form's `onSubmit`: saves without reloading the page. */
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
 * A form's save through the management API: `useMutation` with the form's submit handler and the
 * {@link ApiProblem}'s `fields` mapped to the controls that show them, so the typed text stays and
 * the message sits next to what it concerns.
 *
 * `messageAt` names the field that also shows a failure naming no field: a one-line form has no
 * room for a message of its own, and its first field is where the reader looks.
 */
export function useFormMutation<T>(
  options: UseMutationOptions<T> & { messageAt?: string },
): FormMutation<T> {
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
      mutation.mutate();
    },
    problemAt,
    message: messageAt === undefined ? unplaced : undefined,
  };
}
