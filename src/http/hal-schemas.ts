import { HAL_MEDIA_TYPE } from './hal';

/*
 * JSON Schemas of HAL bodies, for route declarations and so for the OpenAPI document. `fields` may drop any
 * top-level member, `_links` included, so nothing at the top is `required`; what is listed is all there is
 * (`additionalProperties: false`), which the OpenAPI test holds real bodies to.
 */
export type Schema = Record<string, unknown>;

export const ref = (id: string): Schema => ({ $ref: `${id}#` });

export const LINK: Schema = {
  type: 'object',
  properties: { href: { type: 'string', description: 'relative to the API root; never ends in /' } },
  required: ['href'],
  additionalProperties: false,
};

const LINKS: Schema = { type: 'array', items: LINK };

/** `_links`: each relation one link (`one`) or an array of them (`many`). */
export function linksSchema(relations: Record<string, 'one' | 'many'>): Schema {
  const properties = Object.fromEntries(Object.entries(relations).map(([rel, n]) => [rel, n === 'one' ? LINK : LINKS]));
  return { type: 'object', properties, additionalProperties: false };
}

export interface HalShape {
  description?: string;
  /** the resource's own members */
  properties: Record<string, Schema>;
  links: Record<string, 'one' | 'many'>;
  /** what `embedded` can place under `_embedded` */
  embedded?: Record<string, Schema>;
  /** a shared schema's id (app.addSchema), referenced with ref(id) */
  $id?: string;
}

export function halSchema(shape: HalShape): Schema {
  const embedded =
    shape.embedded && Object.keys(shape.embedded).length > 0
      ? { _embedded: { type: 'object', properties: shape.embedded, additionalProperties: false } }
      : {};
  return {
    ...(shape.$id ? { $id: shape.$id } : {}),
    type: 'object',
    ...(shape.description ? { description: shape.description } : {}),
    properties: { _links: linksSchema(shape.links), ...shape.properties, ...embedded },
    additionalProperties: false,
  };
}

/** A page of a collection: counts, paging links, the page's items embedded. */
export function halListSchema(collection: string, item: Schema, description: string): Schema {
  return halSchema({
    description,
    properties: {
      count: { type: 'integer', minimum: 0, description: 'items on this page' },
      total: { type: 'integer', minimum: 0, description: 'items in the collection' },
    },
    links: { self: 'one', next: 'one', prev: 'one', item: 'many' },
    embedded: { [collection]: { type: 'array', items: item } },
  });
}

export interface ResponseOptions {
  headers?: Record<string, Schema>;
  example?: unknown;
}

/** A 2xx answer with a HAL body, as Fastify and @fastify/swagger read a response with content types. */
export function halResponse(description: string, schema: Schema, options: ResponseOptions = {}): Schema {
  return {
    description,
    ...(options.headers ? { headers: options.headers } : {}),
    content: { [HAL_MEDIA_TYPE]: { schema, ...(options.example !== undefined ? { example: options.example } : {}) } },
  };
}

/** A 2xx answer with no body (204). */
export function emptyResponse(description: string, headers?: Record<string, Schema>): Schema {
  return { description, type: 'null', ...(headers ? { headers } : {}) };
}

export const LOCATION_HEADER: Schema = { type: 'string', description: 'the created (or tracking) resource' };
