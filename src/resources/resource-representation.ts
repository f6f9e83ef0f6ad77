import { link, withRelations, type EmbedResolver, type Hal, type HalResource, type Links } from '../http/hal';
import type { ResourceRegistry } from './resource-registry';
import type { ResourceStore, StoredResource } from './resource-store';

/** The HAL form of a stored resource: fields, relations as links, relations embeddable on request. */
export function representation(stored: StoredResource, registry: ResourceRegistry, store: ResourceStore): HalResource {
  const { decl } = registry.get(stored.collection) ?? { decl: undefined };
  if (!decl) throw new Error(`undeclared collection ${stored.collection}`);
  const links: Links = { self: link(`/${decl.collection}/${stored.id}`), collection: link(`/${decl.collection}`) };
  // The resource itself, _links first, rather than fields that halResource would copy once more.
  const resource: Hal = { _links: links, id: stored.id };
  for (const prop of Object.keys(decl.properties)) {
    if (Object.hasOwn(stored.data, prop)) resource[prop] = stored.data[prop];
  }
  resource.createdAt = stored.createdAt;
  resource.updatedAt = stored.updatedAt;

  const embeddable: Record<string, EmbedResolver> = {};
  for (const [rel, r] of Object.entries(decl.relations)) {
    const value = stored.data[rel];
    if (value === undefined) continue;
    const ids = r.many ? (value as string[]) : [value as string];
    const hrefs = ids.map((id) => link(`/${r.collection}/${id}`));
    links[rel] = r.many ? hrefs : hrefs[0];
    const targets = () =>
      ids
        .map((id) => store.get(r.collection, id))
        .filter((t): t is StoredResource => t !== undefined)
        .map((t) => representation(t, registry, store));
    embeddable[rel] = r.many ? targets : () => targets()[0];
  }
  return withRelations(resource, embeddable);
}
