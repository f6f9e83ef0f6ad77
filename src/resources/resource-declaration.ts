/**
 * A resource is declared, not hand-written: its routes, validation, HAL links,
 * selection, bulk handling and domain events all follow from this.
 */
export interface Relation {
  /** collection the relation points into */
  collection: string;
  /** true: an array of links; false: one link */
  many: boolean;
  required?: boolean;
}

export interface ResourceDeclaration {
  /** singular, the key of a bulk body: `{"order": [...]}`, and of events: `order.created` */
  name: string;
  /** plural, the path: `/orders` */
  collection: string;
  /** the resource's own fields (relations excluded), as JSON Schema properties */
  properties: Record<string, object>;
  required: string[];
  relations: Record<string, Relation>;
  /** records created once, when the collection is empty at first start */
  seeds?: { id: string; fields: Record<string, unknown> }[];
  /** a full input, as the OpenAPI document's example (else the first seed's fields) */
  example?: Record<string, unknown>;
}

export const ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';

/**
 * The schema of a full representation as clients send it: fields plus
 * relations given as ids or as hrefs (`/users/u-1`).
 */
export function inputSchema(decl: ResourceDeclaration): object {
  const relationProps: Record<string, object> = {};
  for (const [rel, r] of Object.entries(decl.relations)) {
    const ref = { type: 'string', pattern: `^(/${r.collection}/)?[A-Za-z0-9_-]{1,64}$` };
    relationProps[rel] = r.many ? { type: 'array', items: ref, maxItems: 1000 } : ref;
  }
  const requiredRelations = Object.entries(decl.relations)
    .filter(([, r]) => r.required)
    .map(([k]) => k);
  return {
    type: 'object',
    properties: { ...decl.properties, ...relationProps },
    required: [...decl.required, ...requiredRelations],
    additionalProperties: false,
  };
}
