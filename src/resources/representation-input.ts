import { problem, type ProblemDetail } from '../problems/problem-detail';
import type { ResourceDeclaration } from './resource-declaration';

/** What a GET answer holds that a client cannot set: the server keeps them, whatever a PUT says. */
const SERVER_FIELDS = ['_embedded', 'createdAt', 'updatedAt'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hrefOf(value: unknown): unknown {
  return isObject(value) ? value.href : undefined;
}

/**
 * A PUT body as the client's own input form. A client may send back what GET gave it, with changes (the usual
 * read-modify-write): its `_links` then give the relations (`_links.author.href` for `author`), and what only the
 * server sets (`createdAt`, `updatedAt`, `_embedded`) is dropped. An `id` or a `_links.self` naming another
 * resource than the path is an error, never ignored: the client meant another resource. A body that is not such a
 * representation (no `_links`, no `id`) is left as it is, for the schema to judge.
 */
export function inputFromRepresentation(
  decl: ResourceDeclaration,
  body: unknown,
  id: string,
): { body: unknown; errors: ProblemDetail[] } {
  if (!isObject(body)) return { body, errors: [] };
  const errors: ProblemDetail[] = [];
  const input: Record<string, unknown> = { ...body };
  if (Object.hasOwn(input, 'id')) {
    if (input.id !== id)
      errors.push(mismatch('/id', `is ${JSON.stringify(input.id)}, not the ${decl.name} in the path`));
    delete input.id;
  }
  if (Object.hasOwn(input, '_links')) {
    const links = input._links;
    delete input._links;
    if (isObject(links)) {
      const self = hrefOf(links.self);
      if (self !== undefined && self !== `/${decl.collection}/${id}`) {
        errors.push(mismatch('/_links/self/href', `names ${JSON.stringify(self)}, not the ${decl.name} in the path`));
      }
      for (const [rel, r] of Object.entries(decl.relations)) {
        if (input[rel] !== undefined || links[rel] === undefined) continue;
        const given = links[rel];
        input[rel] = r.many && Array.isArray(given) ? given.map(hrefOf) : hrefOf(given);
      }
    }
  }
  if (Object.hasOwn(body, '_links') || Object.hasOwn(body, 'id')) {
    for (const field of SERVER_FIELDS) if (!Object.hasOwn(decl.properties, field)) delete input[field];
  }
  return { body: input, errors };
}

function mismatch(pointer: string, what: string): ProblemDetail {
  return problem('invalid-field', `${pointer} ${what}`, { instance: pointer });
}
