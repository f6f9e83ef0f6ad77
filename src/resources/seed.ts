import { canonicalId } from '../lib/canonical-id';
import type { ResourceRegistry } from './resource-registry';
import type { ResourceStore } from './resource-store';

/**
 * Seeds declared example records into empty collections at first start. Seeds
 * have fixed ids, so two processes seeding at once write the same keys.
 */
export async function seedResources(registry: ResourceRegistry, store: ResourceStore): Promise<number> {
  const writes = registry.all().flatMap(({ decl }) =>
    store.count(decl.collection) > 0
      ? []
      : (decl.seeds ?? []).map((s) => ({
          op: 'create' as const,
          collection: decl.collection,
          name: decl.name,
          // A seed is found as any resource is: an id or relation in UUID form, in lower case (uuid-ids.ts).
          id: canonicalId(s.id),
          data: withCanonicalRelations(s.fields, Object.keys(decl.relations)),
        })),
  );
  if (writes.length > 0) await store.write(writes);
  return writes.length;
}

function withCanonicalRelations(fields: Record<string, unknown>, relations: string[]): Record<string, unknown> {
  const out = { ...fields };
  for (const rel of relations) {
    const value = out[rel];
    if (typeof value === 'string') out[rel] = canonicalId(value);
    else if (Array.isArray(value)) out[rel] = value.map((v) => (typeof v === 'string' ? canonicalId(v) : v));
  }
  return out;
}
