import type { FastifyInstance } from 'fastify';
import { halResource, link, type HalResource } from '../http/hal';
import { ProblemError } from '../problems/problem-error';
import type { TaskRegistry } from './task-registry';
import { taskTypeRouteSchemas as schemas, taskTypeSchema } from './task-schemas';
import type { TaskType } from './task-type';

function typeRepresentation(t: TaskType): HalResource {
  return halResource(
    { name: t.name, description: t.description, inputSchema: t.inputSchema },
    {
      self: link(`/task-types/${encodeURIComponent(t.name)}`),
      collection: link('/task-types'),
      tasks: link(`/tasks?type=${encodeURIComponent(t.name)}`),
    },
  );
}

/**
 * `GET /task-types` and `GET /task-types/{name}`: what `POST /tasks` accepts as
 * `type` and `input`. Public, like the root and the problem catalogue: they
 * describe the API, not a tenant's data.
 */
export async function taskTypeRoutes(app: FastifyInstance, options: { registry: TaskRegistry }): Promise<void> {
  const config = { public: true };
  app.addSchema(taskTypeSchema);
  app.get('/task-types', { config, schema: schemas.list }, async () => {
    const types = options.registry.all();
    return halResource(
      { count: types.length, total: types.length },
      { self: link('/task-types'), item: types.map((t) => link(`/task-types/${encodeURIComponent(t.name)}`)) },
      { 'task-types': () => types.map(typeRepresentation) },
      ['task-types'],
    );
  });

  app.get<{ Params: { name: string } }>('/task-types/:name', { config, schema: schemas.get }, async (request) => {
    const type = options.registry.get(request.params.name);
    if (!type) {
      const name = JSON.stringify(request.params.name);
      throw new ProblemError('not-found', `There is no task type ${name}; see /task-types.`);
    }
    return typeRepresentation(type);
  });
}
