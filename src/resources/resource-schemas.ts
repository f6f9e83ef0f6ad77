import { JSON_BODY_TYPES, MERGE_PATCH_MEDIA_TYPE } from '../http/content-negotiation';
import {
  emptyResponse,
  halListSchema,
  halResponse,
  halSchema,
  LINK,
  LOCATION_HEADER,
  ref,
  type Schema,
} from '../http/hal-schemas';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../http/idempotency';
import { MAX_BULK_ELEMENTS } from '../http/bulk';
import { pageQuerySchema } from '../http/paging';
import { problemResponse } from '../http/route-schema-conventions';
import { inputSchema, type ResourceDeclaration } from './resource-declaration';
import type { ResourceRegistry } from './resource-registry';

/*
 * Every schema of a declared resource's routes follows from its declaration, so a team's own resource is
 * documented as soon as it is declared.
 */

/** "An order", "An item", "A user": by the sound a name starts with, as its spelling tells for most English nouns. */
const withArticle = (name: string) =>
  `${/^([aeio]|u(?![bcdfghjklmnpqrstvwxyz][aeiouy]))/i.test(name) ? 'An' : 'A'} ${name}`;

const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** The component name of a resource's representation: `order` → `Order`, `line-item` → `LineItem`. */
export function representationSchemaId(decl: ResourceDeclaration): string {
  return pascal(decl.name);
}

/** The HAL representation (resource-representation.ts): fields, relations as links, embeddable relations. */
export function representationSchema(decl: ResourceDeclaration, registry: ResourceRegistry): Schema {
  const links: Record<string, 'one' | 'many'> = { self: 'one', collection: 'one' };
  const embedded: Record<string, Schema> = {};
  for (const [rel, r] of Object.entries(decl.relations)) {
    links[rel] = r.many ? 'many' : 'one';
    const target = registry.get(r.collection);
    const item = target ? ref(representationSchemaId(target.decl)) : { type: 'object' };
    embedded[rel] = r.many ? { type: 'array', items: item } : item;
  }
  const timestamp = { type: 'string', format: 'date-time' };
  return halSchema({
    $id: representationSchemaId(decl),
    description: `${withArticle(decl.name)} of /${decl.collection}.`,
    properties: { id: { type: 'string' }, ...decl.properties, createdAt: timestamp, updatedAt: timestamp },
    links,
    embedded,
  });
}

/** An example of a full input: the declaration's own, else its first seed. */
function inputExample(decl: ResourceDeclaration): Schema {
  const example = decl.example ?? decl.seeds?.[0]?.fields;
  return example ? { examples: [example] } : {};
}

/** JSON merge patch (RFC 7396): any declared field, null to remove it (or to remove a field that is not there). */
function mergePatchSchema(decl: ResourceDeclaration): Schema {
  const full = inputSchema(decl) as { properties: Record<string, Schema> };
  const nullable = Object.fromEntries(
    Object.entries(full.properties).map(([name, schema]) => [name, { anyOf: [schema, { type: 'null' }] }]),
  );
  return {
    type: 'object',
    description:
      `JSON merge patch of a ${decl.name}: listed fields change, null removes one. The patched ${decl.name} ` +
      'must be valid as a whole.',
    properties: nullable,
    additionalProperties: { type: 'null' },
  };
}

function bulkCreateSchema(decl: ResourceDeclaration): Schema {
  return {
    type: 'object',
    description: `Bulk create: every ${decl.name} or none (unless ?atomic=false).`,
    properties: {
      [decl.name]: { type: 'array', minItems: 1, maxItems: MAX_BULK_ELEMENTS, items: inputSchema(decl) },
    },
    required: [decl.name],
    additionalProperties: false,
  };
}

function bulkUpdateSchema(decl: ResourceDeclaration): Schema {
  const patch = mergePatchSchema(decl);
  const self = {
    type: 'object',
    properties: { self: LINK },
    required: ['self'],
    description:
      `names the ${decl.name} to change: /${decl.collection}/{id}; other links may be sent back as GET gave them, ` +
      'never changed (relations are changed as fields)',
  };
  return {
    type: 'object',
    description:
      `Bulk update: each element names its ${decl.name} in _links.self.href and carries a merge patch; ` +
      'all are changed or none (unless ?atomic=false).',
    properties: {
      [decl.name]: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_BULK_ELEMENTS,
        items: { ...patch, properties: { _links: self, ...(patch.properties as Schema) }, required: ['_links'] },
      },
    },
    required: [decl.name],
    additionalProperties: false,
  };
}

const ATOMIC: Schema = {
  type: 'string',
  description:
    'true (the default): all or nothing. false: the valid elements are written and the failures ' +
    'reported (bulk-partially-failed, with processed).',
  examples: ['false'],
};

const bulkFailed = problemResponse(
  'validation-failed (one object), or bulk-failed with one errors[] entry per ' +
    'failed element (instance /<collection>/<index>, the element status: 404 for a missing resource).',
);

/** The route schemas of one declared resource's collection and item routes. */
export function resourceRouteSchemas(decl: ResourceDeclaration) {
  const id = representationSchemaId(decl);
  const tags = [decl.collection];
  const bulk = halSchema({
    description: `The ${decl.collection} a bulk operation wrote.`,
    properties: { count: { type: 'integer', minimum: 0 } },
    links: { self: 'one', item: 'many' },
    embedded: { [decl.collection]: { type: 'array', items: ref(id) } },
  });
  const params = { type: 'object', properties: { id: { type: 'string', description: `the ${decl.name}'s id` } } };
  const notFound = problemResponse(`not-found: no such ${decl.name}.`);
  const atomicQuery = { type: 'object', properties: { atomic: ATOMIC } };
  return {
    list: {
      tags,
      summary: `List ${decl.collection}`,
      operationId: `list${pascal(decl.collection)}`,
      querystring: pageQuerySchema,
      response: {
        200: halResponse(
          `A page of ${decl.collection}, in creation order`,
          halListSchema(decl.collection, ref(id), `A page of ${decl.collection}.`),
        ),
        400: problemResponse('validation-failed: a paging value is invalid.'),
      },
    },
    create: {
      tags,
      summary: `Create one ${decl.name}, or many at once`,
      operationId: `create${pascal(decl.collection)}`,
      description: `One ${decl.name} object creates one. {"${decl.name}": [...]} creates them all, atomically.`,
      querystring: atomicQuery,
      headers: { type: 'object', properties: { 'idempotency-key': IDEMPOTENCY_KEY_HEADER } },
      body: { anyOf: [{ ...inputSchema(decl), ...inputExample(decl) }, bulkCreateSchema(decl)] },
      response: {
        201: halResponse(
          `Created: the ${decl.name}, or for a bulk body the ${decl.collection} created`,
          {
            anyOf: [ref(id), bulk],
          },
          { headers: { Location: LOCATION_HEADER, 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER } },
        ),
        400: bulkFailed,
        404: bulkFailed,
        409: problemResponse('idempotency-key-in-flight.'),
        422: problemResponse('idempotency-key-reused.'),
      },
    },
    updateMany: {
      tags,
      summary: `Change many ${decl.collection} at once`,
      operationId: `update${pascal(decl.collection)}`,
      querystring: atomicQuery,
      consumes: JSON_BODY_TYPES,
      body: bulkUpdateSchema(decl),
      response: { 200: halResponse(`The ${decl.collection} changed`, bulk), 400: bulkFailed, 404: bulkFailed },
    },
    get: {
      tags,
      summary: withArticle(decl.name),
      operationId: `get${id}`,
      params,
      response: { 200: halResponse(`The ${decl.name}`, ref(id)), 404: notFound },
    },
    replace: {
      tags,
      summary: `Replace a ${decl.name}`,
      operationId: `replace${id}`,
      description:
        'Full replacement of an existing resource: PUT never creates, and a partial body is a 400. The body may ' +
        'also be the representation GET gave, changed: its `_links` give the relations, and `createdAt`, ' +
        '`updatedAt` and `_embedded` are ignored; an `id` or `_links.self` naming another resource is a 400.',
      params,
      body: { ...inputSchema(decl), ...inputExample(decl) },
      response: { 200: halResponse(`The ${decl.name} as replaced`, ref(id)), 404: notFound },
    },
    patch: {
      tags,
      summary: `Change a ${decl.name} (JSON merge patch)`,
      operationId: `patch${id}`,
      params,
      consumes: [MERGE_PATCH_MEDIA_TYPE, ...JSON_BODY_TYPES],
      body: mergePatchSchema(decl),
      response: { 200: halResponse(`The ${decl.name} as patched`, ref(id)), 404: notFound },
    },
    remove: {
      tags,
      summary: `Delete a ${decl.name}`,
      operationId: `delete${id}`,
      params,
      response: { 204: emptyResponse('Deleted; from now on 404'), 404: notFound },
    },
  };
}
