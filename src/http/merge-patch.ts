const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * RFC 7386 JSON Merge Patch. Keys go through a Map: a patch key such as
 * `constructor` or `toString` never reads or writes anything inherited.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const base = new Map<string, unknown>(isObject(target) ? Object.entries(target) : []);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) base.delete(key);
    else base.set(key, mergePatch(base.get(key), value));
  }
  return Object.fromEntries(base);
}
