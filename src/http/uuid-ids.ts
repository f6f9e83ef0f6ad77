import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { canonicalId } from '../lib/canonical-id';
import { addRequestStep } from './convention-hooks';

/** A path parameter that names something by its id (`id`, `taskId`); a name (a task type's) is kept as sent. */
const isIdParam = (name: string) => name === 'id' || name.endsWith('Id');

/**
 * A path's ids (`/tasks/{taskId}`, `/orders/{id}`) in their canonical case before any route reads them, so a task
 * copied in upper case is found, and its links and fields name it as the service wrote it. A Problem's `instance`
 * stays the path as it was requested.
 */
export const uuidParamsPlugin = fp(
  async (app: FastifyInstance) => {
    addRequestStep(app, (request) => {
      const params = request.params as Record<string, unknown> | undefined;
      if (params === undefined || params === null) return;
      for (const name in params) {
        const value = params[name];
        if (typeof value === 'string' && value.length === 36 && isIdParam(name)) params[name] = canonicalId(value);
      }
    });
  },
  { name: 'hookstream-uuid-params' },
);
