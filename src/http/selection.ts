import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { addSerializationStep } from './convention-hooks';
import { DEFAULT_EMBEDDED, embedResolver, isHal, type Hal, type HalResource, type Links } from './hal';
import { isPageLink } from './paging';

/** A flat comma list; empty names are dropped, so `fields=` selects nothing. */
function list(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const names: string[] = [];
  if (!Array.isArray(value)) addNames(names, String(value));
  // As the values' join(',') would read them: a missing one is empty.
  else for (const v of value) addNames(names, v === undefined || v === null ? '' : String(v));
  return names;
}

/** The trimmed, non-empty names of one comma list, read in one pass: every HAL answer reads two lists. */
function addNames(names: string[], raw: string): void {
  let start = 0;
  for (;;) {
    const comma = raw.indexOf(',', start);
    const name = (comma < 0 ? raw.slice(start) : raw.slice(start, comma)).trim();
    if (name) names.push(name);
    if (comma < 0) return;
    start = comma + 1;
  }
}

export interface Selection {
  fields?: string[];
  embedded?: string[];
}

export function selectionOf(request: FastifyRequest): Selection {
  const q = (request.query ?? {}) as Record<string, unknown>;
  // `embed` is `embedded`'s alias (DESIGN): given both, the relations of both are embedded.
  const embedded = list(q.embedded);
  const alias = list(q.embed);
  return { fields: list(q.fields), embedded: embedded && alias ? [...embedded, ...alias] : (embedded ?? alias) };
}

/**
 * Spec "Retrieval with field selection and embedding": embedding is applied
 * first, then `fields`; `_links` and `_embedded` are selectable like fields;
 * unknown names are ignored; with no `fields` the default keeps everything.
 * Fields keep the resource's order. This runs on every HAL answer, hence one pass and no intermediate arrays.
 */
export function applySelection(resource: HalResource, selection: Selection): Hal {
  // Nothing selected and nothing to embed: a copy would hold the same members in the same order (see toPlain).
  if (
    !selection.fields &&
    !selection.embedded &&
    !resource[DEFAULT_EMBEDDED]?.length &&
    !Object.hasOwn(resource, '_embedded')
  )
    return resource;
  const embedded = embeddedOf(resource, selection.embedded ?? resource[DEFAULT_EMBEDDED]);
  const keep = selection.fields ? new Set(selection.fields) : undefined;
  const out = {} as Hal;
  let placed = false;
  for (const key of Object.keys(resource)) {
    if (keep && !keep.has(key)) continue;
    if (key === '_embedded') {
      placed = true;
      if (embedded) out._embedded = embedded;
    } else {
      put(out, key, resource[key]);
    }
  }
  if (embedded && !placed && (!keep || keep.has('_embedded'))) out._embedded = embedded;
  return out;
}

/** `out[key] = value`, except that a key like `__proto__` stays an ordinary key instead of setting the prototype. */
function put(out: Hal, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** The resource's own `_embedded` plus the wanted relations it can embed; undefined when that is nothing. */
function embeddedOf(resource: HalResource, wanted: readonly string[] | undefined): Hal['_embedded'] {
  const own = resource._embedded;
  if (!wanted?.length) return own && Object.keys(own).length > 0 ? own : undefined;
  // Entries and fromEntries, never `obj[name] =`: a relation name like `__proto__` stays an ordinary key.
  const embedded: [string, Hal | Hal[]][] = own ? Object.entries(own) : [];
  for (const rel of new Set(wanted)) {
    const value = embedResolver(resource, rel)?.();
    if (value !== undefined) embedded.push([rel, Array.isArray(value) ? value.map(toPlain) : toPlain(value)]);
  }
  return embedded.length > 0 ? Object.fromEntries(embedded) : undefined;
}

/** Embedded resources carry their own default embeds, never their callers' selection. */
function toPlain(resource: HalResource): Hal {
  // With no default embeds and no _embedded of its own, the copy would list the same members in the same order:
  // the resource serializes as it is (its relations are not enumerable), so it is not copied.
  if (!resource[DEFAULT_EMBEDDED]?.length && !Object.hasOwn(resource, '_embedded')) return resource;
  return applySelection(resource, {});
}

const SELECTION_PARAMS = ['fields', 'embedded', 'embed'];

/** The request's own `fields`/`embedded`/`embed` parameters, encoded as it sent them; '' when it sent none. */
function selectionQuery(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  if (q < 0) return '';
  const given = new URLSearchParams(url.slice(q + 1));
  const kept = new URLSearchParams();
  for (const name of SELECTION_PARAMS) for (const value of given.getAll(name)) kept.append(name, value);
  return kept.toString();
}

/**
 * A page's `next` and `prev` (links made by pageLink) carry the selection of the request, so a client paging with
 * `fields` or `embedded` gets the same representation on every page. `self` stays the page (or resource) itself,
 * as HAL has it. The answer is a copy with new links: the resource given may be one a route keeps.
 */
function carrySelection(resource: HalResource, request: FastifyRequest): HalResource {
  const links = resource._links;
  if (!links) return resource;
  let carried: Links | undefined;
  let query: string | undefined;
  // for..in, not Object.entries: this runs on every HAL answer, and most have no page link.
  for (const rel in links) {
    const l = links[rel];
    if (!Object.hasOwn(links, rel) || !isPageLink(l)) continue;
    query ??= selectionQuery(request);
    if (!query) return resource;
    carried ??= { ...links };
    carried[rel] = { href: `${l.href}${l.href.includes('?') ? '&' : '?'}${query}` };
  }
  if (!carried) return resource;
  // Every own property, hidden ones (its embeddable relations) included, with the new links.
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(resource)) as HalResource;
  copy._links = carried;
  return copy;
}

/**
 * A JSON document that is no HAL resource (the OpenAPI and AsyncAPI documents) as the request's `fields` select it:
 * its top-level members, unknown names ignored; without `fields`, `whole` (the document as it is always sent).
 */
export function selectedDocument(request: FastifyRequest, document: object, whole: string): string {
  const fields = selectionOf(request).fields;
  return fields ? JSON.stringify(applySelection(document as HalResource, { fields })) : whole;
}

export const selectionPlugin = fp(
  async (app: FastifyInstance) => {
    addSerializationStep(app, (request, reply, payload) => {
      if (reply.statusCode >= 300 || !isHal(payload)) return payload;
      return applySelection(carrySelection(payload, request), selectionOf(request));
    });
  },
  { name: 'hookstream-selection' },
);
