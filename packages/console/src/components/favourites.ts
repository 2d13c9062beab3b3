import { useCallback, useState } from 'react';

/** Favourite flags, per browser and project (localStorage): the "mine/favourites" filter. */
export function useFavourites(org: string, project: string) {
  const key = `vexil.favourites.${org}/${project}`;
  const [favourites, setFavourites] = useState<Set<string>>(
    () => new Set(JSON.parse(localStorage.getItem(key) ?? '[]') as string[]),
  );
  // The same function until the favourites change (the flag list's rows are memoized on it).
  const toggle = useCallback(
    (flagKey: string) => {
      const next = new Set(favourites);
      if (!next.delete(flagKey)) next.add(flagKey);
      localStorage.setItem(key, JSON.stringify([...next]));
      setFavourites(next);
    },
    [favourites, key],
  );
  return { favourites, toggle };
}
