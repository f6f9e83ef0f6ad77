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
  /** looked up by own name only (embedResolver): a client's relation name (`__proto__`, `toString`) finds no more */
  [EMBEDDABLE]?: Readonly<Record<string, EmbedResolver>>;
  [DEFAULT_EMBEDDED]?: readonly string[];
}

/** hrefs are relative to the API root and never end in `/` (except the root itself). */
export function link(href: string): Link {
  return { href: href.length > 1 && href.endsWith('/') ? href.replace(/\/+$/, '') : href };
}

/** The resolver of a relation the resource declared, and only of one it declared (never an inherited name). */
export function embedResolver(resource: HalResource, rel: string): EmbedResolver | undefined {
  const relations = resource[EMBEDDABLE];
  return relations !== undefined && Object.hasOwn(relations, rel) ? relations[rel] : undefined;
}

function hasOwnKeys(record: object): boolean {
  for (const key in record) if (Object.hasOwn(record, key)) return true;
  return false;
}

export function halResource(
  fields: Record<string, unknown>,
  links: Links,
  embeddable?: Record<string, EmbedResolver>,
  defaultEmbedded?: string[],
): HalResource {
  return withRelations({ _links: links, ...fields }, embeddable, defaultEmbedded);
}

/** A resource built with its `_links` first, given what it can embed: halResource without copying the fields. */
export function withRelations(
  resource: Hal,
  embeddable?: Record<string, EmbedResolver>,
  defaultEmbedded?: string[],
): HalResource {
  // Only a resource with relations gets them as a property, and only one with default embeds those: defining the two
  // on every resource cost each answer more than building the resource itself.
  if (embeddable !== undefined && hasOwnKeys(embeddable)) {
    Object.defineProperty(resource, EMBEDDABLE, { value: embeddable, enumerable: false });
  }
  if (defaultEmbedded !== undefined && defaultEmbedded.length > 0) {
    Object.defineProperty(resource, DEFAULT_EMBEDDED, { value: defaultEmbedded, enumerable: false });
  }
  return resource;
}

export function isHal(value: unknown): value is HalResource {
  return typeof value === 'object' && value !== null && '_links' in value && !Array.isArray(value);
}
