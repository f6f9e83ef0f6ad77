import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { addRequestStep } from './convention-hooks';

const UUID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UPPER = /[A-F]/;

/**
 * RFC 9562 §4: a UUID is read without regard to case and written in lower case, as every id this service makes
 * is. So an id in UUID form is compared in lower case; any other id (a seeded `u-ada`) is kept as it is.
 */
export function canonicalId(id: string): string {
  return id.length === 36 && UPPER.test(id) && UUID_FORM.test(id) ? id.toLowerCase() : id;
}

/** A path (an href sent back) with each segment in UUID form in lower case. */
export function canonicalPath(path: string): string {
  return path.split('/').map(canonicalId).join('/');
}

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
