import { problem, type ProblemDetail } from '../problems/problem-detail';
import { validationErrors } from '../problems/validation';
import type { RegisteredResource } from './resource-registry';
import type { ResourceStore } from './resource-store';

export type Prepared = { ok: true; data: Record<string, unknown> } | { ok: false; errors: ProblemDetail[] };

/**
 * Validates one full representation as a client sent it and normalizes its
 * relations to ids; a relation naming a missing resource is a field error.
 * `before` is the stored document an update replaces (see resolveRelations).
 */
export function prepareInput(
  resource: RegisteredResource,
  input: unknown,
  store: ResourceStore,
  before?: Record<string, unknown>,
): Prepared {
  const errors = validationErrors(resource.validate, input);
  if (errors.length > 0) return { ok: false, errors };
  return resolveRelations(resource, input as Record<string, unknown>, store, before);
}

/**
 * The relations of an input that matches the resource's schema, as ids; a missing target is a field error. A link
 * the stored document (`before`) already holds is kept as it is: deleting a user its orders name leaves them
 * linking to a 404, and an update that does not touch that link (a new status) must not fail on it.
 */
export function resolveRelations(
  resource: RegisteredResource,
  input: Record<string, unknown>,
  store: ResourceStore,
  before?: Record<string, unknown>,
): Prepared {
  const data = { ...input };
  const relationErrors: ProblemDetail[] = [];
  for (const [rel, r] of Object.entries(resource.decl.relations)) {
    if (data[rel] === undefined) continue;
    const strip = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
    const ids = r.many ? (data[rel] as string[]).map(strip) : [strip(data[rel] as string)];
    const held = new Set<unknown>([before?.[rel]].flat());
    ids.forEach((id, i) => {
      if (!held.has(id) && !store.get(r.collection, id)) {
        const pointer = r.many ? `/${rel}/${i}` : `/${rel}`;
        relationErrors.push(
          problem('invalid-field', `${pointer} names /${r.collection}/${id}, which does not exist`, {
            instance: pointer,
          }),
        );
      }
    });
    data[rel] = r.many ? ids : ids[0];
  }
  return relationErrors.length > 0 ? { ok: false, errors: relationErrors } : { ok: true, data };
}
