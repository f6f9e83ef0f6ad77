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
          id: s.id,
          data: s.fields,
        })),
  );
  if (writes.length > 0) await store.write(writes);
  return writes.length;
}
