import type { FastifyInstance } from 'fastify';
import { collectionRoutes } from './collection-routes';
import { itemRoutes } from './item-routes';
import type { ResourceRouteDeps } from './resource-context';
import { representationSchema } from './resource-schemas';

/** Every declared resource gets the same routes from its declaration. */
export async function resourceRoutes(app: FastifyInstance, deps: ResourceRouteDeps): Promise<void> {
  // Each representation is a shared schema, so an order's embedded author is a User in the OpenAPI document.
  for (const { decl } of deps.registry.all()) app.addSchema(representationSchema(decl, deps.registry));
  for (const resource of deps.registry.all()) {
    collectionRoutes(app, resource, deps);
    itemRoutes(app, resource, deps);
  }
}
