import { useSyncExternalStore } from 'react';
import type { Rule } from '../../api/types';
import type { TargetingSettings } from './configuration';

/**
 * Edits to a flag's targeting in an environment that requires change requests, collected
 * instead of saved (design record 043): the targeting as it will be, the revision it was
 * edited from (the change's `baseRevision`), and each edit in words for the list people see.
 */
export interface PendingChanges {
  baseRevision: number;
  settings: TargetingSettings;
  /** The rules as they will be; a rule added here has an id starting with `new-`. */
  rules: Rule[];
  edits: string[];
}

/** Where one flag's pending changes in one environment are kept. */
export interface PendingPlace {
  org: string;
  project: string;
  flag: string;
  environment: string;
}

// Kept in sessionStorage so that a reload or a visit to another page loses nothing typed, and
// read through one cache so that useSyncExternalStore sees the same object until it changes.
const PREFIX = 'vexil.pending.';
const cache = new Map<string, PendingChanges | null>();
const listeners = new Set<() => void>();

function storageKey(place: PendingPlace): string {
  return `${PREFIX}${place.org}/${place.project}/${place.flag}/${place.environment}`;
}

function read(key: string): PendingChanges | null {
  if (!cache.has(key)) {
    const stored = sessionStorage.getItem(key);
    cache.set(key, stored ? (JSON.parse(stored) as PendingChanges) : null);
  }
  return cache.get(key) ?? null;
}

function write(key: string, pending: PendingChanges | null): void {
  if (pending) sessionStorage.setItem(key, JSON.stringify(pending));
  else sessionStorage.removeItem(key);
  cache.set(key, pending);
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * The pending changes of a flag in an environment (null when there are none), and the ways to
 * change them: `record` adds one edit on top of the current (or given stored) state, `discard`
 * drops them all.
 */
export function usePendingChanges(place: PendingPlace): {
  pending: PendingChanges | null;
  record: (
    from: Omit<PendingChanges, 'edits'>,
    edit: string,
    change: (current: Omit<PendingChanges, 'edits'>) => Omit<PendingChanges, 'edits'>,
  ) => void;
  discard: () => void;
} {
  const key = storageKey(place);
  const pending = useSyncExternalStore(subscribe, () => read(key));
  return {
    pending,
    record: (from, edit, change) => {
      const current = read(key) ?? { ...from, edits: [] };
      write(key, { ...change(current), edits: [...current.edits, edit] });
    },
    discard: () => write(key, null),
  };
}
