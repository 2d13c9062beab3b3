import { useState } from 'react';

/** Favourite flags, per browser and project (localStorage): the "mine/favourites" filter. */
export function useFavourites(org: string, project: string) {
  const key = `vexil.favourites.${org}/${project}`;
  const [favourites, setFavourites] = useState<Set<string>>(
    () => new Set(JSON.parse(localStorage.getItem(key) ?? '[]') as string[]),
  );
  function toggle(flagKey: string) {
    const next = new Set(favourites);
    if (!next.delete(flagKey)) next.add(flagKey);
    localStorage.setItem(key, JSON.stringify([...next]));
    setFavourites(next);
  }
  return { favourites, toggle };
}
