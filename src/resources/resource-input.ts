import { canonicalId } from '../lib/canonical-id';
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
  return judgeInput(resource, input, validationErrors(resource.validate, input), store, before);
}

/**
 * The verdict on an input, given what its schema found (`schemaErrors`). With nothing found, its relations resolved
 * (resolveRelations). Otherwise those errors and those of the relations the schema found well-formed, so that one
 * answer lists every error (a missing author beside an itemCount of 0), as the README promises. A relation the schema
 * refused is not looked up: its value may be anything, and its error is already listed.
 */
export function judgeInput(
  resource: RegisteredResource,
  input: unknown,
  schemaErrors: ProblemDetail[],
  store: ResourceStore,
  before?: Record<string, unknown>,
): Prepared {
  if (schemaErrors.length === 0) return resolveRelations(resource, input as Record<string, unknown>, store, before);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { ok: false, errors: schemaErrors };
  const refused = (rel: string) =>
    schemaErrors.some((e) => e.instance === `/${rel}` || e.instance?.startsWith(`/${rel}/`));
  const wellFormed: Record<string, unknown> = {};
  for (const [rel, r] of Object.entries(resource.decl.relations)) {
    const value = (input as Record<string, unknown>)[rel];
    // The shape is checked again: past MAX_FIELD_ERRORS, the schema's list may not name every refused relation.
    const shaped = r.many
      ? Array.isArray(value) && value.every((v) => typeof v === 'string')
      : typeof value === 'string';
    if (shaped && !refused(rel)) wellFormed[rel] = value;
  }
  const related = resolveRelations(resource, wellFormed, store, before);
  return { ok: false, errors: related.ok ? schemaErrors : [...schemaErrors, ...related.errors] };
}

/**
 * The relations of an input, each of the shape the resource's schema gives it, as ids; a missing target is a field
 * error. A link the stored document (`before`) already holds is kept as it is: deleting a user its orders name leaves
 * them linking to a 404, and an update that does not touch that link (a new status) must not fail on it.
 */
function resolveRelations(
  resource: RegisteredResource,
  input: Record<string, unknown>,
  store: ResourceStore,
  before?: Record<string, unknown>,
): Prepared {
  const data = { ...input };
  const relationErrors: ProblemDetail[] = [];
  for (const [rel, r] of Object.entries(resource.decl.relations)) {
    if (data[rel] === undefined) continue;
    const strip = (ref: string) => canonicalId(ref.slice(ref.lastIndexOf('/') + 1));
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
