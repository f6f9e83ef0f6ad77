import type { FastifyInstance } from 'fastify';
import { collectionRoutes } from './collection-routes';
import { itemRoutes } from './item-routes';
import type { ResourceRouteDeps } from './resource-context';

/** Every declared resource gets the same routes from its declaration. */
export async function resourceRoutes(app: FastifyInstance, deps: ResourceRouteDeps): Promise<void> {
  for (const resource of deps.registry.all()) {
    collectionRoutes(app, resource, deps);
    itemRoutes(app, resource, deps);
  }
}
