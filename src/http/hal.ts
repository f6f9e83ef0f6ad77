export const HAL_MEDIA_TYPE = 'application/hal+json';

export interface Link {
  href: string;
}

export type Links = Record<string, Link | Link[]>;

export interface Hal {
  _links: Links;
  _embedded?: Record<string, Hal | Hal[]>;
  [field: string]: unknown;
}

/** Relations a resource can embed on request; computed only when asked for. */
export const EMBEDDABLE = Symbol('hookstream.embeddable');
/** Relations embedded when the request names none. */
export const DEFAULT_EMBEDDED = Symbol('hookstream.defaultEmbedded');

export type EmbedResolver = () => Hal | Hal[] | undefined;

export interface HalResource extends Hal {
  /** a Map, so a client's relation name (`__proto__`, `toString`) can only find what was declared */
  [EMBEDDABLE]?: ReadonlyMap<string, EmbedResolver>;
  [DEFAULT_EMBEDDED]?: readonly string[];
}

/** hrefs are relative to the API root and never end in `/` (except the root itself). */
export function link(href: string): Link {
  return { href: href.length > 1 && href.endsWith('/') ? href.replace(/\/+$/, '') : href };
}

const NOTHING_EMBEDDABLE: ReadonlyMap<string, EmbedResolver> = new Map();

export function halResource(
  fields: Record<string, unknown>,
  links: Links,
  embeddable: Record<string, EmbedResolver> = {},
  defaultEmbedded: string[] = [],
): HalResource {
  const resource: HalResource = { _links: links, ...fields };
  const relations = Object.keys(embeddable).length > 0 ? new Map(Object.entries(embeddable)) : NOTHING_EMBEDDABLE;
  Object.defineProperty(resource, EMBEDDABLE, { value: relations, enumerable: false });
  Object.defineProperty(resource, DEFAULT_EMBEDDED, { value: defaultEmbedded, enumerable: false });
  return resource;
}

export function isHal(value: unknown): value is HalResource {
  return typeof value === 'object' && value !== null && '_links' in value && !Array.isArray(value);
}
