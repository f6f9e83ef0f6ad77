import { canonicalId, canonicalPath } from '../lib/canonical-id';
import { ownPath } from '../http/own-href';
import { pointerToken } from '../lib/ill-formed-text';
import { invalidField, type ProblemDetail } from '../problems/problem-detail';
import type { ResourceDeclaration } from './resource-declaration';

/** What a GET answer holds that a client cannot set: the server keeps them, whatever a PUT says. */
const SERVER_FIELDS = ['_embedded', 'createdAt', 'updatedAt'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The path a link object names, when it is one of ours (relative, or absolute on one of `bases`). */
function linkPath(value: unknown, bases: readonly string[]): string | undefined {
  return isObject(value) && typeof value.href === 'string' ? ownPath(value.href, bases) : undefined;
}

/**
 * A PUT body as the client's own input form. A client may send back what GET gave it, with changes (the usual
 * read-modify-write): its `_links` then give the relations (`_links.author.href` for `author`), and what only the
 * server sets (`createdAt`, `updatedAt`, `_embedded`) is dropped. An `id` or a `_links.self` naming another
 * resource than the path is an error, never ignored: the client meant another resource. So is a relation link that
 * is not a link of ours: dropping it would remove the relation. A body with none of `_links`, `id` and the server's
 * fields is left as it is, for the schema to judge. `bases`: where an absolute href of ours may start (own-href.ts).
 */
export function inputFromRepresentation(
  decl: ResourceDeclaration,
  body: unknown,
  id: string,
  bases: readonly string[],
): { body: unknown; errors: ProblemDetail[]; linked: string[] } {
  // A representation cut down by `fields` may have lost `_links` and `id` and kept a server field.
  const has = (k: string) => Object.hasOwn(body as object, k);
  const serverField = (k: string) => has(k) && !Object.hasOwn(decl.properties, k);
  if (!isObject(body) || !(has('_links') || has('id') || SERVER_FIELDS.some(serverField))) {
    return { body, errors: [], linked: [] };
  }
  const { input, errors, links } = sentBack(decl, body, id, bases);
  const linked: string[] = [];
  if (links === undefined) return { body: input, errors, linked };
  for (const [rel, r] of Object.entries(decl.relations)) {
    const given = links[rel];
    if (input[rel] !== undefined || given === undefined) continue;
    const pointer = `/_links/${rel}`;
    const paths = r.many && Array.isArray(given) ? given.map((l) => linkPath(l, bases)) : [linkPath(given, bases)];
    const inCollection = (p: string | undefined) => p !== undefined && p.startsWith(`/${r.collection}/`);
    if (r.many !== Array.isArray(given) || !paths.every(inCollection)) {
      errors.push(invalidField(pointer, `must be ${r.many ? 'an array of links' : 'a link'} to /${r.collection}/<id>`));
    } else {
      input[rel] = r.many ? paths : paths[0];
      linked.push(rel);
    }
  }
  return { body: input, errors, linked };
}

/**
 * Errors found in the input form, pointed at what the client sent: a relation that came as a link (`linked`, from
 * inputFromRepresentation) is judged as the field `/author`, which the client never sent, so its errors point at
 * the link's href (`/_links/author/href`, `/_links/items/1/href`) and say so in their detail.
 */
export function pointedAsSent(
  decl: ResourceDeclaration,
  errors: ProblemDetail[],
  linked: readonly string[],
): ProblemDetail[] {
  if (linked.length === 0) return errors;
  return errors.map((error) => {
    const at = error.instance;
    const rel = linked.find((name) => at === `/${name}` || at?.startsWith(`/${name}/`));
    if (at === undefined || rel === undefined) return error;
    const rest = at.slice(rel.length + 1);
    const many = decl.relations[rel].many;
    // A to-many link is an array: the array itself has no href, each of its links has one.
    const sent = many && rest === '' ? `/_links/${rel}` : `/_links/${rel}${rest}/href`;
    const detail = error.detail.startsWith(`${at} `) ? sent + error.detail.slice(at.length) : error.detail;
    return { ...error, instance: sent, detail };
  });
}

/**
 * A merge patch as a client may send it: a representation GET gave, edited and sent back, as a PUT may be (and as
 * each element of a bulk PATCH is). Its `_links` are dropped once they check out: a `self` names this resource, the
 * other links are the current ones (a relation is changed as a field: a changed or unknown link, ignored, would
 * answer 200 and drop what the client asked). An `id` must be this resource's; what only the server sets
 * (`createdAt`, `updatedAt`, `_embedded`) is dropped, as a PUT drops it.
 */
export function patchFromRepresentation(
  decl: ResourceDeclaration,
  body: Record<string, unknown>,
  id: string,
  current: Record<string, unknown>,
  bases: readonly string[],
): { patch: Record<string, unknown>; errors: ProblemDetail[] } {
  const { input, errors, links } = sentBack(decl, body, id, bases);
  return { patch: input, errors: links ? [...errors, ...changedLinks(links, current)] : errors };
}

/**
 * What a PUT and a PATCH do alike with a representation sent back: `id`, `_links` and the server's fields dropped
 * from the input; an `id` or a `_links.self` naming another resource than the path is an error, and so are
 * `_links` that are no object of links. `links`: the object of links, when there is one.
 */
function sentBack(
  decl: ResourceDeclaration,
  body: Record<string, unknown>,
  id: string,
  bases: readonly string[],
): { input: Record<string, unknown>; errors: ProblemDetail[]; links?: Record<string, unknown> } {
  const input: Record<string, unknown> = { ...body };
  const errors: ProblemDetail[] = [];
  for (const field of ['id', '_links', ...SERVER_FIELDS])
    if (!Object.hasOwn(decl.properties, field)) delete input[field];
  if (Object.hasOwn(body, 'id') && (typeof body.id === 'string' ? canonicalId(body.id) : body.id) !== id) {
    errors.push(invalidField('/id', `is ${JSON.stringify(body.id)}, not the ${decl.name} in the path`));
  }
  const links = body._links;
  if (links === undefined) return { input, errors };
  if (!isObject(links)) return { input, errors: [...errors, invalidField('/_links', 'must be an object of links')] };
  const self = linkPath(links.self, bases);
  if (links.self !== undefined && (self === undefined || canonicalPath(self) !== `/${decl.collection}/${id}`)) {
    errors.push(invalidField('/_links/self/href', `must name /${decl.collection}/${id}, the ${decl.name} in the path`));
  }
  return { input, errors, links };
}

/** The links other than self that are not the current ones. */
function changedLinks(links: Record<string, unknown>, current: Record<string, unknown>): ProblemDetail[] {
  const hrefs = (link: unknown): string => JSON.stringify(Array.isArray(link) ? link.map(hrefOf) : hrefOf(link));
  return Object.keys(links)
    .filter((rel) => rel !== 'self' && !(Object.hasOwn(current, rel) && hrefs(links[rel]) === hrefs(current[rel])))
    .map((rel) =>
      invalidField(
        `/_links/${pointerToken(rel)}`,
        'is not the current link: links other than self are sent back unchanged or not at all; ' +
          'change a relation as a field',
      ),
    );
}

function hrefOf(link: unknown): unknown {
  return typeof link === 'object' && link !== null && 'href' in link ? (link as { href: unknown }).href : link;
}
