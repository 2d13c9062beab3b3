/**
 * `head`, the `fragments` one after the other, then `tail`, in one buffer allocated at its
 * length: how the bulk answers are written from their cached per-outcome fragments (design
 * record 062). Each fragment starts with the comma that separates it from the one before; the
 * first goes without it. A whole-buffer copy per fragment is the cheapest way found: a copy of a
 * range of one shared buffer makes a view per fragment and costs twice as much, and
 * `Buffer.concat` of the fragments and their commas a native call per part.
 */
export function joinFragments(head: Buffer, fragments: readonly Buffer[], tail: Buffer): Buffer {
  let length = head.length + tail.length - (fragments.length > 0 ? 1 : 0);
  for (const fragment of fragments) length += fragment.length;
  const joined = Buffer.allocUnsafe(length);
  let at = head.copy(joined, 0);
  if (fragments.length > 0) at += (fragments[0] as Buffer).copy(joined, at, 1);
  for (let i = 1; i < fragments.length; i++) at += (fragments[i] as Buffer).copy(joined, at);
  tail.copy(joined, at);
  return joined;
}
